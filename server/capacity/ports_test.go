package capacity

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

func TestParsePortSpec(t *testing.T) {
	got, err := ParsePortSpec("22, 80,8000-8002,bad,9-1")
	if want := []int{22, 80, 8000, 8001, 8002}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("err = %v, want a bad request naming the first bad part", err)
	}
	cases := map[string][]int{
		"":               nil,
		" , ,":           nil,
		"65535":          {65535},
		"65534-65535,80": {65534, 65535, 80},
		"80,80,79-81":    {80, 79, 81},
	}
	for spec, want := range cases {
		got, err := ParsePortSpec(spec)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: got %v, %v; want %v", spec, got, err, want)
		}
	}
	for _, spec := range []string{"65536", "-1", "1-65536", "5-3", "1-2-3", "0x50", "22 80"} {
		if got, err := ParsePortSpec(spec); err == nil || len(got) != 0 {
			t.Errorf("%q: got %v, %v; want no ports and an error", spec, got, err)
		}
	}
	if _, err := ParsePortSpec(strings.Repeat("1,", maxSpecLen)); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("oversized spec: err = %v", err)
	}
	all, err := ParsePortSpec("0-65535,0-65535")
	if err != nil || len(all) != MaxPort+1 {
		t.Errorf("whole range twice: %d ports, %v", len(all), err)
	}
}

// FuzzParsePortSpec: the parser never panics, never returns a port out
// of range or twice, and every port it returns is named by the spec.
func FuzzParsePortSpec(f *testing.F) {
	for _, s := range []string{"22,80,8000-8005", "", "1-65535", "bad,9-1", " 7 - 9 ,", "-", ",,-,", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		ports, _ := ParsePortSpec(spec)
		if len(ports) > MaxPort+1 {
			t.Fatalf("%d ports", len(ports))
		}
		seen := map[int]bool{}
		for _, p := range ports {
			if p < 0 || p > MaxPort || seen[p] {
				t.Fatalf("port %d out of range or repeated in %v", p, ports)
			}
			seen[p] = true
		}
		if len(ports) > 0 && !strings.ContainsAny(spec, "0123456789") {
			t.Fatalf("ports %v from a spec without digits", ports)
		}
	})
}
