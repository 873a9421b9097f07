package api

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// cronSpec is a parsed 5-field cron expression (minute hour day-of-month
// month day-of-week) with the usual *, lists, ranges and steps, or one of
// @yearly @annually @monthly @weekly @daily @midnight @hourly.
type cronSpec struct {
	min, hour, dom, month, dow uint64 // bit sets
	domStar, dowStar           bool
}

var cronAliases = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

func parseCron(spec string) (*cronSpec, error) {
	s := strings.TrimSpace(spec)
	if a, ok := cronAliases[s]; ok {
		s = a
	}
	f := strings.Fields(s)
	if len(f) != 5 {
		return nil, fmt.Errorf("cron %q: want 5 fields, got %d", spec, len(f))
	}
	c := &cronSpec{domStar: f[2] == "*", dowStar: f[4] == "*"}
	var err error
	if c.min, err = cronField(f[0], 0, 59); err != nil {
		return nil, fmt.Errorf("cron %q minute: %w", spec, err)
	}
	if c.hour, err = cronField(f[1], 0, 23); err != nil {
		return nil, fmt.Errorf("cron %q hour: %w", spec, err)
	}
	if c.dom, err = cronField(f[2], 1, 31); err != nil {
		return nil, fmt.Errorf("cron %q day of month: %w", spec, err)
	}
	if c.month, err = cronField(f[3], 1, 12); err != nil {
		return nil, fmt.Errorf("cron %q month: %w", spec, err)
	}
	if c.dow, err = cronField(f[4], 0, 7); err != nil {
		return nil, fmt.Errorf("cron %q day of week: %w", spec, err)
	}
	if c.dow&(1<<7) != 0 { // 7 is Sunday too
		c.dow = c.dow&^(1<<7) | 1
	}
	return c, nil
}

func cronField(f string, lo, hi int) (uint64, error) {
	var bits uint64
	for _, part := range strings.Split(f, ",") {
		step := 1
		if i := strings.IndexByte(part, '/'); i >= 0 {
			n, err := strconv.Atoi(part[i+1:])
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("bad step %q", part)
			}
			step, part = n, part[:i]
		}
		a, b := lo, hi
		switch {
		case part == "*":
		case strings.Contains(part, "-"):
			x, y, _ := strings.Cut(part, "-")
			var err1, err2 error
			a, err1 = strconv.Atoi(x)
			b, err2 = strconv.Atoi(y)
			if err1 != nil || err2 != nil {
				return 0, fmt.Errorf("bad range %q", part)
			}
		default:
			n, err := strconv.Atoi(part)
			if err != nil {
				return 0, fmt.Errorf("bad value %q", part)
			}
			a, b = n, n
			if step > 1 {
				b = hi
			}
		}
		if a < lo || b > hi || a > b {
			return 0, fmt.Errorf("%q out of range %d-%d", part, lo, hi)
		}
		for v := a; v <= b; v += step {
			bits |= 1 << uint(v)
		}
	}
	return bits, nil
}

func (c *cronSpec) dayMatches(t time.Time) bool {
	dom := c.dom&(1<<uint(t.Day())) != 0
	dow := c.dow&(1<<uint(t.Weekday())) != 0
	switch {
	case c.domStar && c.dowStar:
		return true
	case c.domStar:
		return dow
	case c.dowStar:
		return dom
	}
	return dom || dow // both restricted: either matches, as in cron
}

// next returns the first matching minute strictly after t (in t's
// location), or the zero time if none within five years.
func (c *cronSpec) next(t time.Time) time.Time {
	t = t.Truncate(time.Minute).Add(time.Minute)
	limit := t.AddDate(5, 0, 0)
	for t.Before(limit) {
		if c.month&(1<<uint(t.Month())) == 0 {
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, t.Location())
			continue
		}
		if !c.dayMatches(t) {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, t.Location())
			continue
		}
		if c.hour&(1<<uint(t.Hour())) == 0 {
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, t.Location())
			continue
		}
		if c.min&(1<<uint(t.Minute())) == 0 {
			t = t.Add(time.Minute)
			continue
		}
		return t
	}
	return time.Time{}
}

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
