package testproc

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReap: the processes naming a path under a dir (an agent's task
// supervisors) and their descendants (the tasks) are killed, and so are
// the known descendants of a process; nothing else is.
func TestReap(t *testing.T) {
	dir := t.TempDir()
	start := func(args ...string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // as a supervisor
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd
	}
	// A "supervisor" naming a file under dir, with a "task" below it.
	sup := start("/bin/sh", "-c", "sleep 3600 & wait", filepath.Join(dir, "config.json"))
	// A process known only as a descendant of an "agent".
	agent := start("/bin/sh", "-c", "sleep 3601 & wait")
	// A bystander.
	other := start("/bin/sleep", "3602")
	var tasks []Proc
	Eventually(t, 10*time.Second, "the tasks started", func() bool {
		tasks = append(Descendants(sup.Process.Pid), Descendants(agent.Process.Pid)...)
		return len(tasks) == 2
	})
	killed := Reap(Descendants(agent.Process.Pid), dir)
	for _, want := range []string{"sleep 3600", "sleep 3601", filepath.Join(dir, "config.json")} {
		if !slices.ContainsFunc(killed, func(k string) bool { return strings.Contains(k, want) }) {
			t.Errorf("killed %q, want %q among them", killed, want)
		}
	}
	for _, p := range tasks {
		if alive(p) {
			t.Errorf("%v still runs", p.Args)
		}
	}
	if p, ok := readProc(other.Process.Pid); !ok || p.zombie {
		t.Errorf("the bystander %d was killed", other.Process.Pid)
	}
}
