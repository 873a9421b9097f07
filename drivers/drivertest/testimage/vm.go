package testimage

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
)

const (
	// VMKernelFile is the kernel's file name in an output directory.
	VMKernelFile = "vmlinuz"
	// VMInitrdFile is the initramfs's file name in an output directory.
	VMInitrdFile = "initramfs.cpio.gz"

	// VMReadyMarker is printed on the serial console once the guest
	// serves VMHTTPPort and listens for the ACPI power button.
	VMReadyMarker = "drover-guest-ready"
	// VMShutdownMarker is printed when the guest powers off on an ACPI
	// power-button press (QMP system_powerdown).
	VMShutdownMarker = "drover-guest-shutdown"
	// VMHTTPPort is the guest TCP port busybox httpd serves (on the
	// virtio-net NIC, 10.0.2.15 on QEMU's user-mode network).
	VMHTTPPort = 8080
	// VMHTTPBody is the body of GET / on VMHTTPPort (plus a newline).
	VMHTTPBody = "drover-guest-http"
	// VMPrintEnv is a kernel argument the init understands:
	// VMPrintEnv=<hex> prints the hex-decoded line on the console and
	// powers off at once (exit 0). See VMPrintArg.
	VMPrintEnv = "DROVER_PRINT_HEX"

	// kernelMeta is Debian's meta package of the cloud kernel.
	kernelMeta = "linux-image-cloud-amd64"
)

// ErrNoKernel: the kernel package cannot be found or downloaded (no apt,
// no package index, no network).
var ErrNoKernel = errors.New("cannot fetch Debian's linux-image-*-cloud-amd64 package")

// VMPrintArg is the kernel argument that makes the test VM print line on
// its console and power off. The line is hex-encoded so that it appears
// on the console only when the guest prints it.
func VMPrintArg(line string) string {
	return VMPrintEnv + "=" + hex.EncodeToString([]byte(line))
}

// vmModules are loaded by the init (with their dependencies): the ACPI
// power button and its input events, and the virtio NIC.
var vmModules = []string{"evdev", "button", "virtio_pci", "virtio_net"}

// vmInit is the guest's /init (busybox sh). Markers go to /dev/kmsg at
// KERN_CRIT: printk writes the console synchronously, so a line printed
// right before poweroff is not lost in a tty buffer.
const vmInit = `#!/bin/sh
# drover test VM init, written by drivers/drivertest/testimage.
export PATH=/bin
/bin/busybox --install -s /bin 2>/dev/null
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /tmp
say() { echo "<2>$*" > /dev/kmsg; }
while read -r m; do
	insmod "/lib/modules/$m.ko" || echo "init: insmod $m failed"
done < /etc/modules
if [ -n "$` + VMPrintEnv + `" ]; then
	say "$(printf "$(echo "$` + VMPrintEnv + `" | sed 's/../\\x&/g')")"
	poweroff -f
fi
for d in /sys/class/input/event*; do
	[ -e "$d/device/name" ] || continue
	case "$(cat "$d/device/name")" in
	*"Power Button"*)
		( dd if="/dev/input/${d##*/}" of=/dev/null bs=24 count=1 2>/dev/null
		  if mkdir /tmp/.powerdown 2>/dev/null; then say ` + VMShutdownMarker + `; poweroff -f; fi ) &
		;;
	esac
done
ip link set lo up
if ip link set eth0 up 2>/dev/null; then
	ip addr add 10.0.2.15/24 dev eth0
	ip route add default via 10.0.2.2
fi
mkdir -p /www
echo ` + VMHTTPBody + ` > /www/index.html
httpd -p ` + "8080" + ` -h /www
say ` + VMReadyMarker + `
while :; do sleep 3600; done
`

func init() {
	Register(Builder{
		Name: "vm",
		Help: "vmlinuz + initramfs.cpio.gz: Debian's cloud kernel and a busybox initramfs for QEMU",
		Build: func(ctx context.Context, outDir string) ([]string, error) {
			k, i, err := WriteVM(ctx, outDir)
			if err != nil {
				return nil, err
			}
			return []string{k, i}, nil
		},
	})
}

// WriteVM writes outDir/vmlinuz and outDir/initramfs.cpio.gz. The kernel
// comes from Debian's linux-image-*-cloud-amd64 package, downloaded with
// apt-get into outDir once and reused; the initramfs holds the host's
// /bin/busybox, the kernel modules the init loads and the init itself.
// When both files exist and were built from the same inputs it does
// nothing. Concurrent callers (several test processes) are serialised by
// a lock file in outDir.
func WriteVM(ctx context.Context, outDir string) (kernel, initrd string, err error) {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", "", fmt.Errorf("create %s: %w", outDir, err)
	}
	unlock, err := lockDir(outDir)
	if err != nil {
		return "", "", err
	}
	defer unlock()
	kernel, initrd = filepath.Join(outDir, VMKernelFile), filepath.Join(outDir, VMInitrdFile)

	bbInfo, err := os.Stat(BusyboxPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", "", ErrNoBusybox
		}
		return "", "", fmt.Errorf("busybox: %w", err)
	}
	deb, err := kernelDeb(ctx, outDir)
	if err != nil {
		return "", "", err
	}
	stampPath := filepath.Join(outDir, ".vm.stamp")
	stamp := vmStamp(deb, bbInfo)
	if old, err := os.ReadFile(stampPath); err == nil && string(old) == stamp {
		if fileExists(kernel) && fileExists(initrd) {
			return kernel, initrd, nil
		}
	}

	tmp, err := os.MkdirTemp(outDir, ".vm-extract-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, tmp).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("extract %s: %v: %s", deb, err, out)
	}
	vmlinuz, err := filepath.Glob(filepath.Join(tmp, "boot", "vmlinuz-*"))
	if err != nil || len(vmlinuz) == 0 {
		return "", "", fmt.Errorf("%s holds no boot/vmlinuz-*", deb)
	}
	mods, err := resolveModules(filepath.Join(tmp, "lib", "modules"), vmModules)
	if err != nil {
		return "", "", err
	}
	img, err := buildInitramfs(ctx, mods)
	if err != nil {
		return "", "", err
	}
	kb, err := os.ReadFile(vmlinuz[0])
	if err != nil {
		return "", "", err
	}
	if err := writeFileAtomic(kernel, kb); err != nil {
		return "", "", err
	}
	if err := writeFileAtomic(initrd, img); err != nil {
		return "", "", err
	}
	if err := writeFileAtomic(stampPath, []byte(stamp)); err != nil {
		return "", "", err
	}
	return kernel, initrd, nil
}

// vmStamp identifies the inputs of a VM build.
func vmStamp(deb string, bb fs.FileInfo) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d %d\n%s\n%s\n", filepath.Base(deb), bb.Size(), bb.ModTime().UnixNano(), strings.Join(vmModules, ","), vmInit)
	return hex.EncodeToString(h.Sum(nil))
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Size() > 0
}

// lockDir takes an exclusive flock on dir/.vm.lock.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".vm.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func writeFileAtomic(dst string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	return nil
}

var debName = regexp.MustCompile(`^linux-image-[0-9][0-9.]*-[0-9]+-cloud-amd64$`)

// kernelDeb returns a cached linux-image-*-cloud-amd64 .deb in dir, or
// downloads the one Debian's meta package currently depends on.
func kernelDeb(ctx context.Context, dir string) (string, error) {
	cached, _ := filepath.Glob(filepath.Join(dir, "linux-image-*-cloud-amd64_*.deb"))
	if len(cached) > 0 {
		sort.Strings(cached)
		return cached[len(cached)-1], nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", fmt.Errorf("%w: no apt-get", ErrNoKernel)
	}
	name, err := kernelPackage(ctx)
	if err != nil && os.Geteuid() == 0 {
		// The package index may be missing: fetch it once and retry.
		if out, uerr := exec.CommandContext(ctx, "apt-get", "update", "-qq").CombinedOutput(); uerr != nil {
			return "", fmt.Errorf("%w: apt-get update: %v: %s", ErrNoKernel, uerr, out)
		}
		name, err = kernelPackage(ctx)
	}
	if err != nil {
		return "", err
	}
	dl, err := os.MkdirTemp(dir, ".download-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dl)
	cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", name)
	cmd.Dir = dl
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: apt-get download %s: %v: %s", ErrNoKernel, name, err, out)
	}
	got, _ := filepath.Glob(filepath.Join(dl, name+"_*.deb"))
	if len(got) != 1 {
		return "", fmt.Errorf("%w: apt-get download %s left %v", ErrNoKernel, name, got)
	}
	dst := filepath.Join(dir, filepath.Base(got[0]))
	if err := os.Rename(got[0], dst); err != nil {
		return "", err
	}
	return dst, nil
}

// kernelPackage names the current cloud kernel package: what the meta
// package depends on, else the newest one apt-cache lists.
func kernelPackage(ctx context.Context) (string, error) {
	if out, err := exec.CommandContext(ctx, "apt-cache", "depends", kernelMeta).Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Depends:"); ok {
				if n := strings.TrimSpace(v); debName.MatchString(n) {
					return n, nil
				}
			}
		}
	}
	out, err := exec.CommandContext(ctx, "apt-cache", "search", "--names-only", "^linux-image-.*-cloud-amd64$").Output()
	if err != nil {
		return "", fmt.Errorf("%w: apt-cache search: %v", ErrNoKernel, err)
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && debName.MatchString(f[0]) {
			names = append(names, f[0])
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("%w: apt-cache knows no %s package", ErrNoKernel, kernelMeta)
	}
	sort.Strings(names) // good enough: the ABI numbers of one series have the same width
	return names[len(names)-1], nil
}

// module is a kernel module file and its dependencies.
type module struct {
	name string
	path string
	deps []string
}

// resolveModules finds the named modules under modRoot (lib/modules of
// the package) and returns them with their dependencies, dependencies
// first. Dependencies come from each module's .modinfo "depends=".
func resolveModules(modRoot string, want []string) ([]module, error) {
	paths := map[string]string{}
	err := filepath.WalkDir(modRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".ko") {
			paths[modName(strings.TrimSuffix(d.Name(), ".ko"))] = p
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("kernel modules: %w", err)
	}
	var out []module
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(n string) error
	visit = func(n string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("kernel module %s: dependency cycle", n)
		case 2:
			return nil
		}
		p, ok := paths[n]
		if !ok {
			return fmt.Errorf("kernel module %s not in the package", n)
		}
		state[n] = 1
		deps, err := moduleDeps(p)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d); err != nil {
				return err
			}
		}
		state[n] = 2
		out = append(out, module{name: n, path: p, deps: deps})
		return nil
	}
	for _, n := range want {
		if err := visit(modName(n)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func modName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// moduleDeps reads "depends=a,b" from a module's .modinfo section.
func moduleDeps(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read module %s: %w", path, err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, fmt.Errorf("module %s has no .modinfo", path)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("read module %s: %w", path, err)
	}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			var deps []string
			for _, d := range strings.Split(string(v), ",") {
				if d = strings.TrimSpace(d); d != "" {
					deps = append(deps, modName(d))
				}
			}
			return deps, nil
		}
	}
	return nil, nil
}

// buildInitramfs returns the gzipped newc cpio of the test VM's root.
func buildInitramfs(ctx context.Context, mods []module) ([]byte, error) {
	bb, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return nil, fmt.Errorf("read busybox: %w", err)
	}
	applets := fallbackApplets
	if out, err := exec.CommandContext(ctx, BusyboxPath, "--list").Output(); err == nil {
		applets = strings.Fields(string(out))
	}
	sort.Strings(applets)

	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	cw := newCpioWriter(zw)
	add := func(e cpioEntry) {
		if err == nil {
			err = cw.Add(e)
		}
	}
	for _, d := range []string{"bin", "dev", "etc", "lib", "lib/modules", "proc", "sys", "tmp", "www"} {
		add(cpioEntry{Name: d, Mode: cpioDir | 0o755})
	}
	// The kernel opens /dev/console for init before devtmpfs is mounted.
	add(cpioEntry{Name: "dev/console", Mode: cpioCharDev | 0o600, Major: 5, Minor: 1})
	add(cpioEntry{Name: "bin/busybox", Mode: cpioFile | 0o755, Data: bb})
	for _, a := range applets {
		if a == "busybox" || strings.ContainsAny(a, "/ ") {
			continue
		}
		add(cpioEntry{Name: "bin/" + a, Mode: cpioSymlink | 0o777, Data: []byte("busybox")})
	}
	var order strings.Builder
	for _, m := range mods {
		b, rerr := os.ReadFile(m.path)
		if rerr != nil {
			return nil, fmt.Errorf("read module: %w", rerr)
		}
		add(cpioEntry{Name: "lib/modules/" + m.name + ".ko", Mode: cpioFile | 0o644, Data: b})
		order.WriteString(m.name + "\n")
	}
	add(cpioEntry{Name: "etc/modules", Mode: cpioFile | 0o644, Data: []byte(order.String())})
	add(cpioEntry{Name: "init", Mode: cpioFile | 0o755, Data: []byte(vmInit)})
	if err != nil {
		return nil, fmt.Errorf("write initramfs: %w", err)
	}
	if err := cw.Close(); err != nil {
		return nil, fmt.Errorf("write initramfs: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("write initramfs: %w", err)
	}
	return buf.Bytes(), nil
}

var (
	vmOnce                 sync.Once
	vmKernel, vmInitrd     string
	vmErr                  error
	errVMImagesUnavailable = errors.New("test VM images unavailable")
)

// VMImagesPath returns the test VM's kernel and initramfs:
// $DROVER_TEST_IMAGES/{vmlinuz,initramfs.cpio.gz} when both exist (make
// images), otherwise built once per test process (and cached across
// processes) under os.TempDir()/drover-testimage-<uid>.
func VMImagesPath(ctx context.Context) (kernel, initrd string, err error) {
	if dir := os.Getenv("DROVER_TEST_IMAGES"); dir != "" {
		k, i := filepath.Join(dir, VMKernelFile), filepath.Join(dir, VMInitrdFile)
		if fileExists(k) && fileExists(i) {
			return k, i, nil
		}
	}
	vmOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("drover-testimage-%d", os.Getuid()))
		vmKernel, vmInitrd, vmErr = WriteVM(ctx, dir)
	})
	if vmErr != nil {
		return "", "", fmt.Errorf("%w: %w", errVMImagesUnavailable, vmErr)
	}
	return vmKernel, vmInitrd, nil
}

// VMImages is VMImagesPath for a test: without the kernel package or
// busybox the test fails under CI=true and is skipped otherwise.
func VMImages(t testing.TB) (kernel, initrd string) {
	t.Helper()
	k, i, err := VMImagesPath(context.Background())
	if err != nil {
		if os.Getenv("CI") != "true" && (errors.Is(err, ErrNoKernel) || errors.Is(err, ErrNoBusybox)) {
			t.Skip(err)
		}
		t.Fatalf("test VM images: %v", err)
	}
	return k, i
}
