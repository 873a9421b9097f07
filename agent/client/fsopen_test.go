package client

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The openat walk (kernels without openat2) refuses exactly what openat2
// refuses: no link is followed, anywhere in the path.
func TestOpenWalkMatchesOpenat2(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "ok"), []byte("fine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for at, target := range map[string]string{
		"a/out":      outside,
		"a/leak":     filepath.Join(outside, "secret"),
		"a/inside":   "b/ok",
		"a/b/dotdot": "../../..",
	} {
		if err := os.Symlink(target, filepath.Join(dir, at)); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	type opener func(int, string, int) (*os.File, error)
	openers := map[string]opener{
		"openat2": openBeneath,
		"walk": func(fd int, name string, flags int) (*os.File, error) {
			return openWalk(fd, name, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW)
		},
	}
	for oname, open := range openers {
		for _, tc := range []struct {
			name string
			want string // content, "" = refused with ELOOP/ENOTDIR/EXDEV
		}{
			{"a/b/ok", "fine"},
			{"a/out/secret", ""},
			{"a/leak", ""},
			{"a/inside", ""},
			{"a/b/dotdot/etc/passwd", ""},
			{"..", ""},
		} {
			f, err := open(int(root.Fd()), tc.name, unix.O_RDONLY)
			if tc.want != "" {
				if err != nil {
					t.Errorf("%s %s: %v", oname, tc.name, err)
					continue
				}
				b, _ := io.ReadAll(f)
				f.Close()
				if string(b) != tc.want {
					t.Errorf("%s %s = %q, want %q", oname, tc.name, b, tc.want)
				}
				continue
			}
			if err == nil {
				b, _ := io.ReadAll(f)
				f.Close()
				t.Errorf("%s %s opened (%q), want it refused", oname, tc.name, strings.TrimSpace(string(b)))
				continue
			}
			if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.EXDEV) {
				t.Errorf("%s %s: error %v, want ELOOP, ENOTDIR or EXDEV", oname, tc.name, err)
			}
		}
	}
}
