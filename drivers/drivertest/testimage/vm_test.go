package testimage

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The newc writer's output is what GNU cpio reads: names, types, modes,
// contents, symlink targets and device numbers survive a round trip.
func TestCpioNewcReadableByCpio(t *testing.T) {
	cpio, err := exec.LookPath("cpio")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("cpio not installed")
		}
		t.Skip("cpio not installed")
	}
	var buf bytes.Buffer
	w := newCpioWriter(&buf)
	entries := []cpioEntry{
		{Name: "/bin", Mode: cpioDir | 0o755},
		{Name: "bin/hello", Mode: cpioFile | 0o755, Data: []byte("#!/bin/sh\necho hi\n")},
		{Name: "bin/odd", Mode: cpioFile | 0o644, Data: []byte("12345")}, // needs padding
		{Name: "bin/sh", Mode: cpioSymlink | 0o777, Data: []byte("hello")},
		{Name: "dev", Mode: cpioDir | 0o755},
		{Name: "dev/console", Mode: cpioCharDev | 0o600, Major: 5, Minor: 1},
	}
	for _, e := range entries {
		if err := w.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(cpioEntry{Name: "late", Mode: cpioFile}); err == nil {
		t.Error("Add after Close succeeded")
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive length %d is not 4-byte aligned", buf.Len())
	}
	cmd := exec.Command(cpio, "-itv", "--quiet")
	cmd.Stdin = bytes.NewReader(buf.Bytes())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cpio -itv: %v", err)
	}
	list := string(out)
	for _, want := range []string{"drwxr-xr-x", "bin/hello", "bin/odd", "bin/sh -> hello", "crw-------", "5,   1", "dev/console"} {
		if !strings.Contains(list, want) {
			t.Errorf("cpio listing lacks %q:\n%s", want, list)
		}
	}
	dir := t.TempDir()
	cmd = exec.Command(cpio, "-id", "--quiet", "--no-absolute-filenames", "--nonmatching", "dev/console")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(buf.Bytes())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cpio -id: %v: %s", err, out)
	}
	for name, want := range map[string]string{"bin/hello": "#!/bin/sh\necho hi\n", "bin/odd": "12345", "bin/sh": "#!/bin/sh\necho hi\n"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "bin/hello")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("bin/hello mode = %v, %v; want 0755", st.Mode(), err)
	}
}

func TestVMPrintArg(t *testing.T) {
	arg := VMPrintArg("hello from drover")
	want := VMPrintEnv + "=" + hex.EncodeToString([]byte("hello from drover"))
	if arg != want || strings.Contains(arg, " ") || strings.Contains(arg, "hello") {
		t.Errorf("VMPrintArg = %q, want %q (no spaces, not readable)", arg, want)
	}
}

// The VM images: a kernel, and an initramfs with the init, busybox, the
// kernel modules in dependency order and /dev/console. A second build
// with the same inputs leaves the files alone.
func TestWriteVM(t *testing.T) {
	k, i, err := VMImagesPath(context.Background())
	if err != nil {
		if os.Getenv("CI") != "true" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	kb, err := os.ReadFile(k)
	if err != nil {
		t.Fatal(err)
	}
	// A bzImage carries "HdrS" at offset 0x202.
	if len(kb) < 1<<20 || string(kb[0x202:0x206]) != "HdrS" {
		t.Errorf("%s (%d bytes) is not a bzImage", k, len(kb))
	}
	f, err := os.Open(i)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("initramfs is not gzip: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	files := parseNewc(t, raw)
	for _, name := range []string{"init", "bin/busybox", "bin/sh", "bin/httpd", "dev/console", "etc/modules",
		"lib/modules/button.ko", "lib/modules/evdev.ko", "lib/modules/virtio_net.ko", "lib/modules/virtio_pci.ko"} {
		if _, ok := files[name]; !ok {
			t.Errorf("initramfs lacks %s", name)
		}
	}
	if init := string(files["init"]); !strings.Contains(init, VMReadyMarker) || !strings.Contains(init, VMShutdownMarker) {
		t.Errorf("init does not print the markers:\n%s", init)
	}
	order := strings.Fields(string(files["etc/modules"]))
	pos := map[string]int{}
	for n, m := range order {
		pos[m] = n
	}
	for _, dep := range [][2]string{{"virtio", "virtio_pci"}, {"virtio_ring", "virtio_net"}, {"net_failover", "virtio_net"}, {"failover", "net_failover"}} {
		a, okA := pos[dep[0]]
		b, okB := pos[dep[1]]
		if !okA || !okB || a > b {
			t.Errorf("module order %v: %s must come before %s", order, dep[0], dep[1])
		}
	}
	if dir := filepath.Dir(k); os.Getenv("DROVER_TEST_IMAGES") != dir {
		before, _ := os.Stat(i)
		if _, _, err := WriteVM(context.Background(), dir); err != nil {
			t.Fatal(err)
		}
		after, _ := os.Stat(i)
		if !after.ModTime().Equal(before.ModTime()) {
			t.Error("a second WriteVM with the same inputs rebuilt the initramfs")
		}
	}
}

// parseNewc returns the regular files and symlinks of a newc archive.
func parseNewc(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	align := func(n int) int { return (n + 3) &^ 3 }
	for off := 0; ; {
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			t.Fatalf("bad newc header at %d", off)
		}
		field := func(i int) int {
			var v int
			for _, c := range b[off+6+8*i : off+14+8*i] {
				v <<= 4
				switch {
				case c >= '0' && c <= '9':
					v |= int(c - '0')
				case c >= 'A' && c <= 'F':
					v |= int(c-'A') + 10
				case c >= 'a' && c <= 'f':
					v |= int(c-'a') + 10
				}
			}
			return v
		}
		size, nameSize := field(6), field(11)
		name := string(b[off+110 : off+110+nameSize-1])
		data := align(off + 110 + nameSize)
		if name == "TRAILER!!!" {
			return out
		}
		out[name] = b[data : data+size]
		off = align(data + size)
	}
}
