package qemu

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drover/drover/drivers"
)

// versionProbeTimeout bounds `qemu-system-x86_64 --version`.
const versionProbeTimeout = 10 * time.Second

var versionRE = regexp.MustCompile(`version ([0-9]+\.[0-9]+(?:\.[0-9]+)?)`)

// parseVersion extracts "7.2.22" from qemu's --version output.
func parseVersion(out []byte) string {
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// kvmDevice is the KVM device node (a variable for tests).
var kvmDevice = "/dev/kvm"

// cpuinfo is read for hardware virtualisation flags (a variable for tests).
var cpuinfo = "/proc/cpuinfo"

// kvmIoctlGetAPIVersion is KVM_GET_API_VERSION; KVM's stable API is 12.
const (
	kvmIoctlGetAPIVersion = 0xAE00
	kvmAPIVersion         = 12
)

// KVMUsable reports whether VMs can use KVM here: /dev/kvm opens
// read-write, speaks API version 12, and the CPU advertises hardware
// virtualisation (vmx or svm). The last check matters in nested setups
// where /dev/kvm exists but guests never run.
func KVMUsable() bool {
	f, err := os.OpenFile(kvmDevice, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	v, err := unix.IoctlRetInt(int(f.Fd()), kvmIoctlGetAPIVersion)
	if err != nil || v != kvmAPIVersion {
		return false
	}
	b, err := os.ReadFile(cpuinfo)
	if err != nil {
		return false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("flags")) {
			continue
		}
		for _, f := range bytes.Fields(line) {
			if string(f) == "vmx" || string(f) == "svm" {
				return true
			}
		}
	}
	return false
}

// Fingerprint: healthy when the emulator is installed. Attributes:
// driver.qemu=1, driver.qemu.kvm=true/false and, once the version probe
// (run once, in the background, on the first call) has answered,
// driver.qemu.version. The call itself never waits for qemu.
func (d *Driver) Fingerprint(_ context.Context) *drivers.Fingerprint {
	fp := &drivers.Fingerprint{Attributes: map[string]string{}}
	emu, err := d.emulator()
	if err != nil {
		fp.Health, fp.HealthDescription = drivers.HealthUndetected, err.Error()
		return fp
	}
	if _, err := os.Stat(d.bin); err != nil {
		fp.Health, fp.HealthDescription = drivers.HealthUnhealthy, fmt.Sprintf("executor binary: %v", err)
		return fp
	}
	d.probeOnce.Do(func() {
		d.wg.Add(1)
		go func() { // owned by the driver; Close waits for it
			defer d.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), versionProbeTimeout)
			defer cancel()
			out, err := exec.CommandContext(ctx, emu, "--version").Output()
			d.mu.Lock()
			defer d.mu.Unlock()
			if err != nil {
				d.versionErr = err
				return
			}
			d.version = parseVersion(out)
		}()
	})
	fp.Attributes["driver.qemu"] = "1"
	fp.Attributes["driver.qemu.kvm"] = fmt.Sprint(KVMUsable())
	d.mu.Lock()
	version, verr := d.version, d.versionErr
	d.mu.Unlock()
	if version != "" {
		fp.Attributes["driver.qemu.version"] = version
	}
	if verr != nil {
		fp.Health, fp.HealthDescription = drivers.HealthUnhealthy, fmt.Sprintf("%s --version: %v", emu, verr)
		return fp
	}
	fp.Health, fp.HealthDescription = drivers.HealthHealthy, "healthy"
	return fp
}

// emulator finds the qemu binary.
func (d *Driver) emulator() (string, error) {
	name := d.cfg.Emulator
	if name == "" {
		name = defaultEmulator
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("qemu not found: %w", err)
	}
	return p, nil
}

// qemuImg finds qemu-img (needed for image_path and drives).
func qemuImg() (string, error) {
	p, err := exec.LookPath("qemu-img")
	if err != nil {
		return "", fmt.Errorf("qemu-img not found (apt-get install qemu-utils): %w", err)
	}
	return p, nil
}
