package executor

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCPURate: TotalTicks is the MHz in use between two samples (the
// rate of CPU time over wall time, on a core of the host's MHz), never
// the cumulative CPU milliseconds (issue 47: 6.0 GHz shown on a 4.2 GHz
// host).
func TestCPURate(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name             string
		prevCPU, cpu     uint64 // ns
		prev, now        time.Time
		mhz              float64
		percent, totalMH float64
	}{
		{"first sample", 0, 6e9, time.Time{}, t0, 4200, 0, 0},
		{"a quarter core", 6e9, 6.5e9, t0, t0.Add(2 * time.Second), 4200, 25, 1050},
		{"a core and a half", 6e9, 9e9, t0, t0.Add(2 * time.Second), 4200, 150, 6300},
		{"idle after 6 s of CPU", 6e9, 6e9, t0, t0.Add(time.Second), 4200, 0, 0},
		{"counter went back", 6e9, 1e9, t0, t0.Add(time.Second), 4200, 0, 0},
	} {
		got := cpuRate(tc.prevCPU, tc.prev, tc.cpu, tc.now, tc.mhz)
		if got.Percent != tc.percent || got.TotalTicks != tc.totalMH {
			t.Errorf("%s: Percent %v, TotalTicks %v; want %v, %v", tc.name, got.Percent, got.TotalTicks, tc.percent, tc.totalMH)
		}
	}
}

func TestReadMHz(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	info := write("cpuinfo", "processor\t: 0\nmodel name\t: x\ncpu MHz\t\t: 3600.123\n")
	maxf := write("max", "4200000\n")
	missing := filepath.Join(dir, "none")
	for _, tc := range []struct {
		name          string
		maxFreq, info string
		want          int
	}{
		{"max frequency first", maxf, info, 4200},
		{"cpuinfo", missing, info, 3600},
		{"unknown", missing, missing, 1000},
	} {
		if got := readMHz(tc.maxFreq, tc.info); got != tc.want {
			t.Errorf("%s: %d MHz, want %d", tc.name, got, tc.want)
		}
	}
}
