package exec

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
)

// Issue #15: exec accepted user = "root". Root is denied by default
// (client option user.denylist, as in Nomad); an explicitly set list
// replaces the default.
func TestUserDenylist(t *testing.T) {
	drivertest.NeedRoot(t)
	idCmd := map[string]any{"command": "/bin/sh", "args": []any{"-c", "id -un"}}
	for _, tc := range []struct {
		name    string
		options map[string]string
		user    string
		denied  string // the denied user in the error, "" = runs
	}{
		{"root denied by default", nil, "root", "root"},
		{"uid 0 denied by default", nil, "0", "0 (root)"},
		{"explicit list replaces the default", map[string]string{"user.denylist": "nobody, admin"}, "root", ""},
		{"explicit list denies its users", map[string]string{"user.denylist": "nobody,admin"}, "nobody", "nobody"},
		{"empty list allows root", map[string]string{"user.denylist": ""}, "root", ""},
		{"non-root user runs by default", nil, "nobody", ""},
		{"default user runs by default", nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriverWith(t, tc.options)
			cfg := drivertest.NewTaskConfig(t, "who", idCmd)
			cfg.User = tc.user
			if tc.denied != "" {
				_, err := d.StartTask(context.Background(), cfg)
				if err == nil {
					_ = d.DestroyTask(context.Background(), cfg.ID, true)
					t.Fatalf("StartTask as %q succeeded, want it refused by user.denylist", tc.user)
				}
				want := "user " + tc.denied + " is in the client's user.denylist"
				if !strings.Contains(err.Error(), want) || !errors.Is(err, drivers.ErrInvalidConfig) {
					t.Fatalf("StartTask error %q, want ErrInvalidConfig with %q", err, want)
				}
				return
			}
			res, out := runOn(t, d, cfg)
			want := tc.user
			if want == "" || want == "0" {
				want = "nobody"
			}
			if !res.Successful() || out != want+"\n" {
				t.Errorf("exit %+v, output %q; want user %s", res, out, want)
			}
		})
	}
}
