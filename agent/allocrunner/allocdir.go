package allocrunner

import (
	"fmt"
	"os"
	"path/filepath"
)

// BuildAllocDir creates dir/alloc/{logs,data,tmp} and, per task,
// dir/<task>/{local,secrets,tmp}. It is idempotent.
func BuildAllocDir(dir string, tasks []string) error {
	type d struct {
		p    string
		mode os.FileMode
	}
	ds := []d{{dir, 0o755}, {filepath.Join(dir, "alloc"), 0o755}, {filepath.Join(dir, "alloc", "logs"), 0o755},
		{filepath.Join(dir, "alloc", "data"), 0o755}, {filepath.Join(dir, "alloc", "tmp"), 0o1777}}
	for _, t := range tasks {
		ds = append(ds, d{filepath.Join(dir, t), 0o755}, d{filepath.Join(dir, t, "local"), 0o755},
			d{filepath.Join(dir, t, "secrets"), 0o700}, d{filepath.Join(dir, t, "tmp"), 0o1777})
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
