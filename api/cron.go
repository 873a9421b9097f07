package api

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/cronexpr"
)

// cronSpec is a parsed cron expression in Nomad's grammar, which is
// hashicorp/cronexpr's: five fields (minute hour day-of-month month
// day-of-week), six (the five and a year) or seven (a second, the five
// and a year); names (JAN, MON), L, W, # and ?; and @yearly @annually
// @monthly @weekly @daily @midnight @hourly.
type cronSpec struct{ expr *cronexpr.Expression }

// cronEpoch is where parseCron looks for a first firing: a spec that
// never fires after it (a backwards range, February 31) is refused.
var cronEpoch = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

func parseCron(spec string) (c *cronSpec, err error) {
	s := strings.TrimSpace(spec)
	if s == "@midnight" { // cronexpr lacks this alias; cron has it
		s = "@daily"
	}
	// cronexpr documents its behaviour on malformed input as undefined;
	// a job file is stranger input, so a panic is a refusal.
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("cron %q: malformed", spec)
		}
	}()
	e, err := cronexpr.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("cron %q: %w", spec, err)
	}
	if e.Next(cronEpoch).IsZero() {
		return nil, fmt.Errorf("cron %q: never fires", spec)
	}
	return &cronSpec{expr: e}, nil
}

// next returns the first firing strictly after t (in t's location), or
// the zero time if none.
func (c *cronSpec) next(t time.Time) time.Time { return c.expr.Next(t) }

// Next is the first launch time strictly after after, over every spec of
// the config, in its time zone (UTC when unset); zero when no spec ever
// fires again.
func (p *PeriodicConfig) Next(after time.Time) (time.Time, error) {
	loc := time.UTC
	if p.TimeZone != "" {
		l, err := time.LoadLocation(p.TimeZone)
		if err != nil {
			return time.Time{}, fmt.Errorf("time zone %q: %w", p.TimeZone, err)
		}
		loc = l
	}
	var next time.Time
	for _, sp := range p.allSpecs() {
		c, err := parseCron(sp)
		if err != nil {
			return time.Time{}, err
		}
		if n := c.next(after.In(loc)); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next, nil
}

func (p *PeriodicConfig) allSpecs() []string {
	if p.Spec == "" {
		return p.Specs
	}
	return append([]string{p.Spec}, p.Specs...)
}
