package allocrunner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/drover/drover/api"
)

// TaskDir is the host path of a task's directory, dir/<task>. It refuses a
// task name that is not one clean path element inside dir (api.CheckName):
// a job stored before the servers checked names, with a task named ".."
// or "a/b", must not make the alloc root or another alloc's directory a
// task dir (templates and artifacts are written there as root).
func TaskDir(dir, task string) (string, error) {
	if err := api.CheckName(task); err != nil {
		return "", fmt.Errorf("task name %q: %w", task, err)
	}
	p := filepath.Join(dir, task)
	if filepath.Dir(p) != filepath.Clean(dir) || filepath.Base(p) != task {
		return "", fmt.Errorf("task name %q is not one path element", task)
	}
	return p, nil
}

// BuildAllocDir creates dir/alloc/{logs,data,tmp} and, per task,
// dir/<task>/{local,secrets,tmp}. It is idempotent. A task name TaskDir
// refuses fails it before anything is created.
func BuildAllocDir(dir string, tasks []string) error {
	type d struct {
		p    string
		mode os.FileMode
	}
	ds := []d{{dir, 0o755}, {filepath.Join(dir, "alloc"), 0o755}, {filepath.Join(dir, "alloc", "logs"), 0o755},
		{filepath.Join(dir, "alloc", "data"), 0o755}, {filepath.Join(dir, "alloc", "tmp"), 0o1777}}
	for _, t := range tasks {
		td, err := TaskDir(dir, t)
		if err != nil {
			return fmt.Errorf("build alloc dir: %w", err)
		}
		ds = append(ds, d{td, 0o755}, d{filepath.Join(td, "local"), 0o755},
			d{filepath.Join(td, "secrets"), 0o700}, d{filepath.Join(td, "tmp"), 0o1777})
	}
	for _, x := range ds {
		if err := os.MkdirAll(x.p, x.mode); err != nil {
			return fmt.Errorf("build alloc dir: %w", err)
		}
		if err := os.Chmod(x.p, x.mode); err != nil {
			return fmt.Errorf("build alloc dir: %w", err)
		}
	}
	return nil
}
