package containerd

import (
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
)

// TestConformance runs the drivers conformance suite against the busybox
// OCI image in the package's private containerd.
func TestConformance(t *testing.T) {
	needDaemon(t)
	image := busyboxImage(t)
	h := drivertest.ShellHarness(&drivertest.Harness{
		New:            func(t *testing.T) drivers.Driver { return newDriver(t, nil) },
		Parallel:       true,
		EnforcesMemory: true,
		Timeout:        60 * time.Second,
	})
	withImage := func(f func() map[string]any) map[string]any {
		m := f()
		m["image"] = image
		return m
	}
	printLine, printStderr, exit, sleep := h.PrintLine, h.PrintStderr, h.Exit, h.Sleep
	ignore, useMem, memLimit, trap := h.IgnoreTERM, h.UseMemory, h.PrintMemoryLimit, h.TrapSignal
	h.PrintLine = func(l string) map[string]any { return withImage(func() map[string]any { return printLine(l) }) }
	h.PrintStderr = func(l string) map[string]any { return withImage(func() map[string]any { return printStderr(l) }) }
	h.Exit = func(c int) map[string]any { return withImage(func() map[string]any { return exit(c) }) }
	h.Sleep = func(d time.Duration, c int) map[string]any {
		return withImage(func() map[string]any { return sleep(d, c) })
	}
	h.IgnoreTERM = func() map[string]any { return withImage(ignore) }
	h.UseMemory = func(mb int) map[string]any { return withImage(func() map[string]any { return useMem(mb) }) }
	h.PrintMemoryLimit = func() map[string]any { return withImage(memLimit) }
	h.TrapSignal = func(s, l string) map[string]any { return withImage(func() map[string]any { return trap(s, l) }) }
	h.InvalidConfigs = []map[string]any{
		{"command": "/bin/true"}, // no image
		{"image": 5},
		{"image": image, "command": 5},
		{"image": image, "args": "not-a-list"},
		{"image": image, "args": []any{1}},
		{"image": image, "privileged": true}, // not allowed by the client
		{"image": image, "cap_add": []any{"SYS_ADMIN"}},
		{"image": image, "mounts": []any{map[string]any{"target": "relative"}}},
		{"image": image, "pids_limit": -1},
		{"image": image, "auth": []any{map[string]any{"user": "x"}}},
	}
	drivertest.Run(t, h)
}
