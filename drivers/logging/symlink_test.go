package logging

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// plant is what a hostile task leaves where a log file goes.
type plant func(t *testing.T, at, outside string)

func symlinkTo(t *testing.T, at, outside string) {
	t.Helper()
	if err := os.Symlink(outside, at); err != nil {
		t.Fatal(err)
	}
}

// Issue #15: rotation appended task output to a host file through a link
// the task planted where the next rotated file goes. The writer must
// replace the link (or a FIFO, or a hard link) with a file of its own and
// never write outside Dir.
func TestRotationNeverWritesThroughPlantedFiles(t *testing.T) {
	for name, tc := range map[string]struct {
		idx   int // where it is planted: 0 before Open (a restart), 1 after Open (the next rotation)
		plant plant
	}{
		"symlink as next rotated file":    {1, symlinkTo},
		"symlink as file resumed at Open": {0, symlinkTo},
		"dangling symlink as next file": {1, func(t *testing.T, at, outside string) {
			symlinkTo(t, at, outside+".new")
		}},
		"hard link as next file": {1, func(t *testing.T, at, outside string) {
			if err := os.Link(outside, at); err != nil {
				t.Skipf("hard link: %v", err)
			}
		}},
		"fifo as next file": {1, func(t *testing.T, at, outside string) {
			if err := syscall.Mkfifo(at, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			outside := filepath.Join(t.TempDir(), "host-file")
			if err := os.WriteFile(outside, []byte("original\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			at := filepath.Join(dir, FileName("web", "stdout", tc.idx))
			if tc.idx == 0 {
				tc.plant(t, at, outside)
			}
			w, err := Open(Config{Dir: dir, Prefix: Prefix("web", "stdout"), MaxBytes: 100})
			if err != nil {
				t.Fatal(err)
			}
			if tc.idx == 1 {
				tc.plant(t, at, outside)
			}
			data := strings.Repeat("task output\n", 50) // 600 bytes: files 0..5
			if n, err := w.Write([]byte(data)); err != nil || n != len(data) {
				t.Fatalf("Write = %d, %v", n, err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(outside); err != nil || string(b) != "original\n" {
				t.Errorf("outside file = %q, %v; want it unchanged", b, err)
			}
			if _, err := os.Lstat(outside + ".new"); err == nil {
				t.Errorf("the writer created a file outside its dir through a dangling link")
			}
			st, err := os.Lstat(at)
			if err != nil || !st.Mode().IsRegular() {
				t.Fatalf("%s = %v, %v; want a regular file of the writer's", at, st, err)
			}
			got, err := ReadAll(dir, Prefix("web", "stdout"))
			if err != nil || string(got) != data {
				t.Errorf("logs = %d bytes, %v; want the %d bytes written", len(got), err, len(data))
			}
		})
	}
}

func TestOpenRefusesLinkedDir(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "logs")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if w, err := Open(Config{Dir: link, Prefix: "web.stdout"}); err == nil {
		w.Close()
		t.Fatal("Open followed a linked log dir")
	}
	if ents, _ := os.ReadDir(real); len(ents) != 0 {
		t.Errorf("files written through the link: %v", ents)
	}
}

func TestReadAllRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	symlinkTo(t, filepath.Join(dir, "web.stdout.0"), outside)
	if b, err := ReadAll(dir, "web.stdout"); err == nil || strings.Contains(string(b), "s3cret") {
		t.Errorf("ReadAll = %q, %v; want an error, not the linked file", b, err)
	}
}
