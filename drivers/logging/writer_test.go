package logging

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRotatesAndKeepsMaxFiles(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(Config{Dir: dir, Prefix: Prefix("web", "stdout"), MaxFiles: 3, MaxBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	for i := 0; i < 6; i++ {
		line := []byte(strings.Repeat(string(rune('a'+i)), 7))
		all.Write(line)
		if n, err := w.Write(line); err != nil || n != len(line) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// 42 bytes at 10 per file: indexes 0..4, only the 3 newest kept.
	got, err := Indexes(dir, "web.stdout")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{2, 3, 4}, got); diff != "" {
		t.Fatalf("indexes (-want +got):\n%s", diff)
	}
	for _, i := range []int{2, 3} {
		st, err := os.Stat(filepath.Join(dir, FileName("web", "stdout", i)))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() != 10 {
			t.Errorf("file %d size = %d, want 10", i, st.Size())
		}
	}
	content, err := ReadAll(dir, "web.stdout")
	if err != nil {
		t.Fatal(err)
	}
	if want := all.Bytes()[20:]; !bytes.Equal(content, want) {
		t.Errorf("content = %q, want %q", content, want)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
}

func TestResumesNewestFileAfterRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, Prefix: "api.stderr", MaxFiles: 5, MaxBytes: 8}
	w, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("0123456789ab")); err != nil { // fills .0, starts .1
		t.Fatal(err)
	}
	w.Close()
	w2, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w2.Write([]byte("cdefgh")); err != nil { // .1 has 4, gets 4 more, then .2
		t.Fatal(err)
	}
	w2.Close()
	for idx, want := range map[int]string{0: "01234567", 1: "89abcdef", 2: "gh"} {
		b, err := os.ReadFile(filepath.Join(dir, "api.stderr."+string(rune('0'+idx))))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want {
			t.Errorf("file %d = %q, want %q", idx, b, want)
		}
	}
}

func TestIndexesIgnoresOtherFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"web.stdout.0", "web.stdout.12", "web.stdout.x", "web.stdout.01", "web.stderr.3", "webx.stdout.1"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Indexes(dir, "web.stdout")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 12}, got); diff != "" {
		t.Errorf("indexes (-want +got):\n%s", diff)
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{{Prefix: "a.stdout"}, {Dir: t.TempDir()}, {Dir: t.TempDir(), Prefix: "a/b.stdout"}} {
		if _, err := Open(cfg); err == nil {
			t.Errorf("Open(%+v) succeeded, want error", cfg)
		}
	}
}

func TestDefaultSizeLimit(t *testing.T) {
	w, err := Open(Config{Dir: t.TempDir(), Prefix: "t.stdout"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.maxBytes != DefaultMaxFileSizeMB<<20 || w.cfg.MaxFiles != DefaultMaxFiles {
		t.Errorf("defaults = %d bytes, %d files", w.maxBytes, w.cfg.MaxFiles)
	}
}
