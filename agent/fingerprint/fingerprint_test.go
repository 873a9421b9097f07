package fingerprint

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

func TestFingerprintHostAttributes(t *testing.T) {
	dir := t.TempDir()
	h, err := FingerprintHost(HostConfig{DataDir: dir, DevMode: true})
	if err != nil {
		t.Fatalf("FingerprintHost: %v", err)
	}
	a := h.Attributes
	ints := []string{"cpu.numcores", "cpu.frequency", "cpu.totalcompute", "memory.totalbytes",
		"unique.storage.bytestotal", "unique.storage.bytesfree"}
	for _, k := range ints {
		v, ok := a[k]
		if !ok {
			t.Errorf("attribute %q missing", k)
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
			t.Errorf("attribute %q = %q, want a positive integer", k, v)
		}
	}
	for k, want := range map[string]string{"kernel.name": "linux", "unique.network.ip-address": "127.0.0.1", "arch": "amd64"} {
		if k == "arch" && a[k] == "" {
			t.Errorf("arch missing")
			continue
		}
		if k != "arch" && a[k] != want {
			t.Errorf("%s = %q, want %q", k, a[k], want)
		}
	}
	for _, k := range []string{"kernel.version", "unique.hostname", "cpu.arch", "unique.storage.volume", "unique.cgroup.version", "os.name"} {
		if a[k] == "" {
			t.Errorf("attribute %q missing or empty", k)
		}
	}
	cores, _ := strconv.Atoi(a["cpu.numcores"])
	mhz, _ := strconv.Atoi(a["cpu.frequency"])
	if got, want := h.Resources.Cpu.CpuShares, int64(cores*mhz); got != want {
		t.Errorf("CpuShares = %d, want cores*MHz = %d", got, want)
	}
	if h.Resources.Memory.MemoryMB <= 0 || h.Resources.Disk.DiskMB <= 0 {
		t.Errorf("resources = %+v, want memory and disk > 0", h.Resources)
	}
	free, _ := strconv.ParseInt(a["unique.storage.bytesfree"], 10, 64)
	if got, want := h.Resources.Disk.DiskMB, free>>20; got != want {
		t.Errorf("DiskMB = %d, want free bytes/MiB = %d", got, want)
	}
}

func TestFingerprintHostFakeRoot(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU 9000\ncpu MHz\t\t: 2400.123\n")
	write("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "3500000\n")
	write("proc/meminfo", "MemTotal:       2048000 kB\nMemFree: 1 kB\n")
	write("etc/os-release", "ID=debian\nVERSION_ID=\"12\"\nPRETTY_NAME=\"Debian GNU/Linux 12\"\n")
	write("sys/fs/cgroup/cgroup.controllers", "cpu memory\n")
	write("sys/devices/system/node/node0/cpulist", "0-1,4\n")
	write("sys/devices/system/node/node1/cpulist", "2-3\n")
	h, err := FingerprintHost(HostConfig{DataDir: root, Root: root, BindAddr: "10.1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"cpu.modelname": "Test CPU 9000", "cpu.frequency": "3500", "memory.totalbytes": strconv.Itoa(2048000 * 1024),
		"os.name": "debian", "os.version": "12", "unique.cgroup.version": "v2", "unique.network.ip-address": "10.1.2.3",
	}
	for k, v := range want {
		if got := h.Attributes[k]; got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if got, want := h.Resources.Memory.MemoryMB, int64(2000); got != want {
		t.Errorf("MemoryMB = %d, want %d", got, want)
	}
	if got, want := h.Resources.Cpu.NUMA, []api.NodeNUMANode{{ID: 0, Cores: []uint16{0, 1, 4}}, {ID: 1, Cores: []uint16{2, 3}}}; !reflect.DeepEqual(got, want) {
		t.Errorf("NUMA = %v, want %v", got, want)
	}
}

func TestFingerprintHostMissingDataDir(t *testing.T) {
	if _, err := FingerprintHost(HostConfig{DataDir: filepath.Join(t.TempDir(), "nope")}); err == nil {
		t.Fatal("want an error for a missing data dir")
	}
}

type fpDriver struct {
	drivers.Driver
	name string
	fp   *drivers.Fingerprint
}

func (d *fpDriver) Fingerprint(context.Context) *drivers.Fingerprint { return d.fp }

func TestFingerprintDrivers(t *testing.T) {
	ds := map[string]drivers.Driver{
		"exec": &fpDriver{name: "exec", fp: &drivers.Fingerprint{Health: drivers.HealthHealthy,
			Attributes: map[string]string{"driver.exec.version": "1"}}},
		"qemu": &fpDriver{name: "qemu", fp: &drivers.Fingerprint{Health: drivers.HealthUndetected, HealthDescription: "no qemu"}},
		"bad":  &fpDriver{name: "bad", fp: &drivers.Fingerprint{Health: drivers.HealthUnhealthy, HealthDescription: "broken"}},
	}
	now := time.Unix(100, 0)
	infos, attrs := FingerprintDrivers(context.Background(), ds, now)
	if attrs["driver.exec"] != "1" || attrs["driver.exec.version"] != "1" {
		t.Errorf("attrs = %v, want driver.exec=1 and its version", attrs)
	}
	if _, ok := attrs["driver.qemu"]; ok {
		t.Errorf("undetected driver advertised: %v", attrs)
	}
	if _, ok := attrs["driver.bad"]; ok {
		t.Errorf("unhealthy driver advertised: %v", attrs)
	}
	if i := infos["exec"]; !i.Detected || !i.Healthy || !i.UpdateTime.Equal(now) {
		t.Errorf("exec info = %+v", i)
	}
	if i := infos["qemu"]; i.Detected || i.Healthy || i.HealthDescription != "no qemu" {
		t.Errorf("qemu info = %+v", i)
	}
	if i := infos["bad"]; !i.Detected || i.Healthy {
		t.Errorf("bad info = %+v", i)
	}
	infos2, _ := FingerprintDrivers(context.Background(), ds, now.Add(time.Minute))
	if !SameDrivers(infos, infos2) {
		t.Error("SameDrivers = false for fingerprints differing only in time")
	}
	ds["exec"].(*fpDriver).fp = &drivers.Fingerprint{Health: drivers.HealthUnhealthy}
	infos3, _ := FingerprintDrivers(context.Background(), ds, now)
	if SameDrivers(infos, infos3) {
		t.Error("SameDrivers = true after a health change")
	}
}

func BenchmarkFingerprintHost(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		if _, err := FingerprintHost(HostConfig{DataDir: dir}); err != nil {
			b.Fatal(err)
		}
	}
}
