package allocrunner

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/drover/drover/api"
)

// A task name that is not one path element (a job stored before servers
// checked names) must not make the alloc root, a sibling alloc or any
// other directory a task dir: nothing is created and the runner refuses
// the alloc.
func TestTaskNamesStayInTheAllocDir(t *testing.T) {
	for _, name := range []string{"..", ".", "", "a/b", "../other", `a\b`, "a\x00b", "/abs"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "alloc-1")
			if p, err := TaskDir(dir, name); err == nil {
				t.Fatalf("TaskDir(%q) = %s, want an error", name, p)
			}
			if err := BuildAllocDir(dir, []string{"web", name}); err == nil {
				t.Fatalf("BuildAllocDir with task %q succeeded", name)
			}
			if entries, _ := os.ReadDir(root); len(entries) != 0 {
				t.Errorf("BuildAllocDir created %v under the alloc root", entries)
			}
			_, err := New(Config{Alloc: newAlloc(api.JobTypeService, nil, task("web", nil), task(name, nil)), AllocDir: dir})
			if !errors.Is(err, api.ErrBadRequest) {
				t.Errorf("New with task %q: %v, want ErrBadRequest", name, err)
			}
		})
	}
}

func TestTaskDirAcceptsNomadNames(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"web", "web.v2", "my-task_1", "...", "a..b", "ünïcødé", "alloc"} {
		p, err := TaskDir(dir, name)
		if err != nil || p != filepath.Join(dir, name) {
			t.Errorf("TaskDir(%q) = %q, %v; want %q", name, p, err, filepath.Join(dir, name))
		}
	}
	if err := BuildAllocDir(dir, []string{"web.v2"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "web.v2", "secrets")); err != nil || !fi.IsDir() {
		t.Errorf("secrets dir of web.v2: %v", err)
	}
}
