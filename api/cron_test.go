package api

import (
	"strings"
	"testing"
	"time"
)

func TestCronNext(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 7, 30, 0, time.UTC) // a Sunday
	cases := []struct{ spec, want string }{
		{"*/5 * * * *", "2026-03-01T12:10:00Z"},
		{"0 * * * *", "2026-03-01T13:00:00Z"},
		{"@daily", "2026-03-02T00:00:00Z"},
		{"30 9 * * 1-5", "2026-03-02T09:30:00Z"},
		{"0 0 1 * *", "2026-04-01T00:00:00Z"},
		{"15,45 12 * * *", "2026-03-01T12:15:00Z"},
		{"0 0 29 2 *", "2028-02-29T00:00:00Z"},
		{"0 12 * * 7", "2026-03-08T12:00:00Z"},
		{"0 12 * * 6-7", "2026-03-07T12:00:00Z"},
		// Nomad's grammar (hashicorp/cronexpr): a sixth field is a year, a
		// seventh makes the first one seconds; names, L and ? as in Quartz.
		{"*/15 * * * * *", "2026-03-01T12:15:00Z"},
		{"0 9 * * * 2027", "2027-01-01T09:00:00Z"},
		{"*/10 * * * * * *", "2026-03-01T12:07:40Z"},
		{"0 0 12 * * ? 2030", "2030-01-01T12:00:00Z"},
		{"0 8 * * MON-FRI", "2026-03-02T08:00:00Z"},
		{"0 0 L * *", "2026-03-31T00:00:00Z"},
		{"@midnight", "2026-03-02T00:00:00Z"},
	}
	for _, c := range cases {
		spec, err := parseCron(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		if got := spec.next(base).Format(time.RFC3339); got != c.want {
			t.Errorf("%s: next = %s, want %s", c.spec, got, c.want)
		}
	}
	for _, bad := range []string{"* * * *", "61 * * * *", "*/0 * * * *", "a * * * *", "5-1 * * * *", "0 0 31 2 *", "@every 5m", "1 2 3 4 5 6 7 8"} {
		if _, err := parseCron(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestPeriodicNextAndValidate(t *testing.T) {
	p := &PeriodicConfig{Enabled: true, Spec: "0 12 * * *", Specs: []string{"30 6 * * *"}, TimeZone: "Europe/Paris"}
	got, err := p.Next(time.Date(2026, 3, 1, 4, 0, 0, 0, time.UTC)) // 05:00 in Paris
	if err != nil || !got.Equal(time.Date(2026, 3, 1, 5, 30, 0, 0, time.UTC)) {
		t.Errorf("Next = %v, %v; want 06:30 Paris (05:30 UTC)", got, err)
	}
	j := &Job{ID: "cron", Type: JobTypeBatch, TaskGroups: []*TaskGroup{{Name: "g", Count: 1, Tasks: []*Task{{Name: "t", Driver: "exec"}}}},
		Periodic: &PeriodicConfig{Enabled: true, Spec: "61 * * * *"}}
	j.Canonicalize()
	if err := j.Validate(); err == nil || !strings.Contains(err.Error(), "periodic:") {
		t.Errorf("a job with cron spec 61 * * * * validated: %v", err)
	}
}
