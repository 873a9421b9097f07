package drivertest

import (
	"fmt"
	"strings"
	"time"
)

// ShellHarness fills h's task configs for process drivers whose config
// is {command, args} and whose tasks can run /bin/sh and GNU coreutils
// (exec, raw_exec).
func ShellHarness(h *Harness) *Harness {
	sh := func(script string, args ...string) map[string]any {
		a := []any{"-c", script, "sh"}
		for _, s := range args {
			a = append(a, s)
		}
		return map[string]any{"command": "/bin/sh", "args": a}
	}
	h.PrintLine = func(line string) map[string]any { return sh(`printf '%s\n' "$1"`, line) }
	h.PrintStderr = func(line string) map[string]any { return sh(`printf '%s\n' "$1" >&2`, line) }
	h.Exit = func(code int) map[string]any { return sh(fmt.Sprintf("exit %d", code)) }
	h.Sleep = func(d time.Duration, code int) map[string]any {
		return sh(fmt.Sprintf(`trap 'exit 0' TERM; sleep %.3f & wait $!; exit %d`, d.Seconds(), code))
	}
	h.IgnoreTERM = func() map[string]any {
		return sh(`trap '' TERM; echo ready; while :; do sleep 1; done`)
	}
	// tail keeps a newline-free input in memory until EOF.
	h.UseMemory = func(mb int) map[string]any {
		return sh(fmt.Sprintf(`(head -c %d /dev/zero && sleep 600) | tail`, mb<<20))
	}
	h.PrintMemoryLimit = func() map[string]any {
		return sh(`cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max`)
	}
	h.TrapSignal = func(signal, line string) map[string]any {
		s := strings.TrimPrefix(strings.ToUpper(signal), "SIG")
		return sh(fmt.Sprintf(`trap 'printf "%%s\n" "$1"; exit 0' %s; echo ready; while :; do sleep 0.05; done`, s), line)
	}
	h.ExecEcho = func(line string) []string { return []string{"/bin/echo", line} }
	h.ExecExit = func(code int) []string { return []string{"/bin/sh", "-c", fmt.Sprintf("exit %d", code)} }
	h.KilledSignal = 9
	h.InvalidConfigs = []map[string]any{
		{"command": 5},
		{"command": "/bin/true", "args": "not-a-list"},
		{"command": "/bin/true", "args": []any{1}},
		{"args": []any{"x"}},
		{"command": "/bin/true", "pid_mode": "bogus"},
	}
	return h
}
