package qemu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/digitalocean/go-qemu/qmp/raw"
	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/drivertest/testimage"
	"github.com/drover/drover/drivers/executor"
	"github.com/drover/drover/internal/testproc"
)

// The conformance suite: fingerprint, config validation, and one VM that
// prints a line on its console and powers off (exit 0). The suite's
// other subtests need exit codes or signals a VM cannot give and are
// skipped; TestVMLifecycle covers stop, ports, stats and reattach.
func TestConformance(t *testing.T) {
	needQEMU(t)
	kernel, initrd, dir := vmImages(t)
	drivertest.Run(t, &drivertest.Harness{
		New: func(t *testing.T) drivers.Driver { return newDriver(t, []string{dir}, "-device") },
		PrintLine: func(line string) map[string]any {
			return map[string]any{"kernel": kernel, "initrd": initrd,
				"kernel_args": "console=ttyS0 quiet " + testimage.VMPrintArg(line)}
		},
		Timeout: vmTimeout,
		InvalidConfigs: []map[string]any{
			{"kernel": 5},
			{"accelerator": "tcg"},
			{"kernel": kernel, "accelerator": "hvf"},
			{"kernel": kernel, "machine": "pc,accel=kvm"},
			{"kernel": kernel, "port_map": map[string]any{"http": 0}},
			{"kernel": kernel, "args": []any{"-monitor", "stdio"}},
			{"image_path": "x.img", "drives": []any{map[string]any{"path": "d", "format": "vmdk"}}},
		},
	})
}

func roundTrip(t *testing.T, h *drivers.TaskHandle) *drivers.TaskHandle {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var out drivers.TaskHandle
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func waitExit(t *testing.T, d drivers.Driver, id string) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	ch, err := d.WaitTask(ctx, id)
	if err != nil {
		t.Fatalf("WaitTask: %v", err)
	}
	res, ok := <-ch
	if !ok || res == nil {
		t.Fatalf("VM %s did not exit within %s", id, vmTimeout)
	}
	return res
}

func handleState(t *testing.T, h *drivers.TaskHandle) driverState {
	t.Helper()
	var st driverState
	if err := json.Unmarshal(h.DriverState, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// gone reports whether pid has exited (and been reaped).
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// httpGet polls url until it answers 200 or the deadline passes.
func httpGet(t *testing.T, url string, timeout time.Duration) string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	var body string
	var err error
	defer func() {
		if t.Failed() {
			t.Logf("GET %s: %v", url, err)
		}
	}()
	testproc.Eventually(t, timeout, "GET "+url+" answering 200", func() bool {
		var r *http.Response
		if r, err = c.Get(url); err != nil {
			return false
		}
		b, rerr := io.ReadAll(r.Body)
		r.Body.Close()
		if rerr == nil && r.StatusCode == 200 {
			body = string(b)
			return true
		}
		err = fmt.Errorf("status %d, read %v", r.StatusCode, rerr)
		return false
	})
	return body
}

// One VM for the whole life of a task: it boots from the test kernel,
// says it is ready on its console, serves a port that the host reaches
// through port_map, has stats, survives a driver restart (reattach via
// the handle), powers off gracefully over QMP, and leaves nothing behind.
func TestVMLifecycle(t *testing.T) {
	needQEMU(t)
	kernel, initrd, dir := vmImages(t)
	d := newDriver(t, []string{dir})
	port := testproc.FreePort(t)
	cfg := drivertest.NewTaskConfig(t, "vm", map[string]any{
		"kernel": kernel, "initrd": initrd, "kernel_args": "console=ttyS0 quiet",
		"port_map": map[string]any{"http": int64(testimage.VMHTTPPort)},
	})
	cfg.Ports = []api.AllocatedPort{{Label: "http", Value: port, HostIP: "127.0.0.1"}}
	cfg.KillTimeout = 2 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	h, err := d.StartTask(ctx, cfg)
	if err != nil {
		t.Fatalf("StartTask: %v", err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), cfg.ID, true) })
	st := handleState(t, h)
	if want := filepath.Join(cfg.TaskDir, "qmp.sock"); st.QMPSocket != want || st.OwnSocketDir {
		t.Errorf("QMP socket %s (own dir %v), want %s in the task dir", st.QMPSocket, st.OwnSocketDir, want)
	}
	pid := st.Executor.TaskPID

	waitLog(t, cfg, "stdout", testimage.VMReadyMarker, vmTimeout)
	if got := httpGet(t, "http://127.0.0.1:"+strconv.Itoa(port)+"/", time.Minute); strings.TrimSpace(got) != testimage.VMHTTPBody {
		t.Errorf("GET through the forwarded port = %q, want %q", got, testimage.VMHTTPBody)
	}
	u, err := d.TaskStats(ctx, cfg.ID)
	if err != nil {
		t.Fatalf("TaskStats: %v", err)
	}
	if m := u.ResourceUsage.MemoryStats; m.RSS < 16<<20 && m.Usage < 16<<20 {
		t.Errorf("qemu memory %+v, want at least 16 MB for a booted 256 MB guest", m)
	}
	if c := u.ResourceUsage.CpuStats; c.TotalTicks <= 0 {
		t.Errorf("qemu cpu %+v, want time spent booting", c)
	}

	// A restarted agent: a new driver instance recovers the VM from the
	// persisted handle; the old one lets go without touching the VM.
	d2 := newDriver(t, []string{dir})
	hd := roundTrip(t, h)
	if err := d2.RecoverTask(ctx, hd); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	if err := d2.RecoverTask(ctx, hd); err != nil {
		t.Fatalf("second RecoverTask: %v", err)
	}
	_ = d.Close()
	if gone(pid) {
		t.Fatal("qemu exited when the first driver instance closed")
	}
	if status, err := d2.tasks.Get(cfg.ID); err != nil {
		t.Fatal(err)
	} else if s, err := status.qmp.Status(ctx); err != nil || s != "running" {
		t.Fatalf("recovered VM QMP status = %q, %v; want running", s, err)
	}

	if err := d2.StopTask(ctx, cfg.ID, cfg.KillTimeout, ""); err != nil {
		t.Fatalf("StopTask: %v", err)
	}
	res := waitExit(t, d2, cfg.ID)
	if !res.Successful() {
		t.Errorf("exit after graceful power-down = %+v, want a clean exit", res)
	}
	if out := readLog(t, cfg, "stdout"); !strings.Contains(out, testimage.VMShutdownMarker) {
		t.Errorf("console log lacks the guest's %q line:\n%s", testimage.VMShutdownMarker, out)
	}
	if !gone(pid) {
		t.Errorf("qemu pid %d still exists after the VM stopped", pid)
	}
	if err := d2.DestroyTask(ctx, cfg.ID, false); err != nil {
		t.Fatalf("DestroyTask: %v", err)
	}
	for _, p := range []string{st.QMPSocket, st.StateDir} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after DestroyTask (%v)", p, err)
		}
	}
	if _, err := d2.WaitTask(ctx, cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("WaitTask after destroy = %v, want ErrTaskNotFound", err)
	}
}

// biosVM starts a VM whose only disk is blank: SeaBIOS finds nothing to
// boot and waits, ignoring ACPI. Cheap (no kernel boots) and stubborn.
func biosVM(t *testing.T, d *Driver, extra map[string]any) (*drivers.TaskConfig, *drivers.TaskHandle, []byte) {
	t.Helper()
	cfg := drivertest.NewTaskConfig(t, "bios", nil)
	blank := bytes.Repeat([]byte{0}, 1<<20)
	if err := os.WriteFile(filepath.Join(cfg.TaskDir, "blank.img"), blank, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Config = map[string]any{"image_path": "blank.img", "accelerator": "tcg"}
	for k, v := range extra {
		cfg.Config[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	h, err := d.StartTask(ctx, cfg)
	if err != nil {
		t.Fatalf("StartTask: %v", err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), cfg.ID, true) })
	return cfg, h, blank
}

// A guest that ignores the power button is quit over QMP after the kill
// timeout; the exit is not clean. The image itself was never written:
// the VM ran on an overlay in the task dir.
func TestStopQuitsAfterTimeout(t *testing.T) {
	needQEMU(t)
	d := newDriver(t, nil)
	cfg, h, blank := biosVM(t, d, nil)
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	start := time.Now()
	if err := d.StopTask(ctx, cfg.ID, 500*time.Millisecond, ""); err != nil {
		t.Fatalf("StopTask: %v", err)
	}
	res := waitExit(t, d, cfg.ID)
	if res.Successful() || res.Signal != int(syscall.SIGTERM) {
		t.Errorf("exit of a VM quit after the timeout = %+v, want SIGTERM", res)
	}
	if el := time.Since(start); el > quitGrace+30*time.Second {
		t.Errorf("stop took %s", el)
	}
	if got, err := os.ReadFile(filepath.Join(cfg.TaskDir, "blank.img")); err != nil || !bytes.Equal(got, blank) {
		t.Errorf("image changed by the VM (err %v)", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.TaskDir, "qemu-disk0.qcow2")); err != nil {
		t.Errorf("no overlay in the task dir: %v", err)
	}
	if pid := handleState(t, h).Executor.TaskPID; !gone(pid) {
		t.Errorf("qemu pid %d left", pid)
	}
}

// graceful_shutdown = false skips the power button: QMP quit at once.
func TestStopWithoutGracefulShutdown(t *testing.T) {
	needQEMU(t)
	d := newDriver(t, nil)
	cfg, h, _ := biosVM(t, d, map[string]any{"graceful_shutdown": false})
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	start := time.Now()
	// A long timeout that must not be waited out.
	if err := d.StopTask(ctx, cfg.ID, 10*time.Minute, ""); err != nil {
		t.Fatalf("StopTask: %v", err)
	}
	if el := time.Since(start); el > time.Minute {
		t.Errorf("stop without graceful shutdown took %s", el)
	}
	if res := waitExit(t, d, cfg.ID); res.Signal != int(syscall.SIGTERM) {
		t.Errorf("exit = %+v, want SIGTERM (quit)", res)
	}
	// A driver started after the VM ended recovers its recorded exit,
	// forced stop included.
	d2 := newDriver(t, nil)
	if err := d2.RecoverTask(ctx, roundTrip(t, h)); err != nil {
		t.Fatalf("RecoverTask of an exited VM: %v", err)
	}
	if res := waitExit(t, d2, cfg.ID); res.Signal != int(syscall.SIGTERM) || res.Successful() {
		t.Errorf("recovered exit = %+v, want SIGTERM (quit)", res)
	}
}

// A qemu that no longer answers QMP (stopped) is killed after the grace.
func TestStopKillsUnresponsiveQEMU(t *testing.T) {
	needQEMU(t)
	d := newDriver(t, nil)
	cfg, h, _ := biosVM(t, d, nil)
	pid := handleState(t, h).Executor.TaskPID
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	if err := d.StopTask(ctx, cfg.ID, 300*time.Millisecond, ""); err != nil {
		t.Fatalf("StopTask: %v", err)
	}
	if res := waitExit(t, d, cfg.ID); res.Signal != int(syscall.SIGKILL) {
		t.Errorf("exit = %+v, want SIGKILL", res)
	}
	if !gone(pid) {
		t.Errorf("qemu pid %d left", pid)
	}
}

func TestDestroyRunning(t *testing.T) {
	needQEMU(t)
	d := newDriver(t, nil)
	cfg, h, _ := biosVM(t, d, nil)
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	if err := d.DestroyTask(ctx, cfg.ID, false); err == nil {
		t.Error("DestroyTask(force=false) of a running VM succeeded")
	}
	if err := d.DestroyTask(ctx, cfg.ID, true); err != nil {
		t.Fatalf("DestroyTask(force): %v", err)
	}
	if pid := handleState(t, h).Executor.TaskPID; !gone(pid) {
		t.Errorf("qemu pid %d left after a forced destroy", pid)
	}
	if _, err := d.WaitTask(ctx, cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("WaitTask after destroy = %v, want ErrTaskNotFound", err)
	}
}

// Bad input fails before anything runs, with a clear error, and leaves
// no state behind; a qemu that refuses its arguments reports why.
func TestStartRejects(t *testing.T) {
	needQEMU(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "disk.img")
	if err := os.WriteFile(secret, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, nil, "-device")
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	tests := []struct {
		name string
		cfg  map[string]any
		is   error
		msg  string
	}{
		{"image outside", map[string]any{"image_path": secret}, ErrPathNotAllowed, "outside the alloc dir"},
		{"kernel outside", map[string]any{"kernel": "/etc/passwd"}, ErrPathNotAllowed, "outside the alloc dir"},
		{"dotdot", map[string]any{"image_path": "../../x.img"}, ErrPathNotAllowed, `".."`},
		{"missing image", map[string]any{"image_path": "nope.img"}, drivers.ErrInvalidConfig, "nope.img"},
		{"arg not allowed", map[string]any{"kernel": "k", "args": []any{"-monitor", "stdio"}}, drivers.ErrInvalidConfig, "args_allowlist"},
		{"unknown port label", map[string]any{"image_path": "blank.img", "port_map": map[string]any{"db": 5432}}, drivers.ErrInvalidConfig, `"db"`},
	}
	if !KVMUsable() {
		tests = append(tests, struct {
			name string
			cfg  map[string]any
			is   error
			msg  string
		}{"kvm without kvm", map[string]any{"image_path": "blank.img", "accelerator": "kvm"}, drivers.ErrInvalidConfig, "/dev/kvm"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := drivertest.NewTaskConfig(t, "bad", tc.cfg)
			if err := os.WriteFile(filepath.Join(cfg.TaskDir, "blank.img"), make([]byte, 1<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := d.StartTask(ctx, cfg)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("StartTask = %v, want %v mentioning %q", err, tc.is, tc.msg)
			}
		})
	}
	// qemu itself rejects a device: StartTask says what qemu said.
	cfg := drivertest.NewTaskConfig(t, "baddev", nil)
	if err := os.WriteFile(filepath.Join(cfg.TaskDir, "blank.img"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Config = map[string]any{"image_path": "blank.img", "accelerator": "tcg", "args": []any{"-device", "no-such-device-xyz"}}
	_, err := d.StartTask(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "no-such-device-xyz") {
		t.Fatalf("StartTask with a bogus device = %v, want qemu's complaint about it", err)
	}
	if _, err := os.Stat(filepath.Join(stateDir, executor.CgroupName(cfg.ID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed start left its supervisor state (%v)", err)
	}
	if _, err := d.WaitTask(ctx, cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("failed start left a task behind: %v", err)
	}
}

// A qcow2 image whose backing file lies outside the allowed directories
// is refused (its header would make qemu read that file).
func TestImageBackingChainChecked(t *testing.T) {
	needQEMU(t)
	outside := filepath.Join(t.TempDir(), "base.raw")
	if err := os.WriteFile(outside, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	allowed := t.TempDir()
	evil := filepath.Join(allowed, "evil.qcow2")
	qi, err := qemuImg()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := overlay(ctx, qi, outside, "raw", evil); err != nil {
		t.Fatal(err)
	}
	pol := newPathPolicy(allowed, allowed, nil)
	if _, err := pol.inspectImage(ctx, qi, "image_path", evil, ""); !errors.Is(err, ErrPathNotAllowed) {
		t.Errorf("image backed by %s: %v, want ErrPathNotAllowed", outside, err)
	}
	// The same chain inside the allowed dirs is fine, and its format is detected.
	pol = newPathPolicy(allowed, allowed, []string{filepath.Dir(outside)})
	if f, err := pol.inspectImage(ctx, qi, "image_path", evil, ""); err != nil || f != "qcow2" {
		t.Errorf("inspectImage = %q, %v; want qcow2", f, err)
	}
	if f, err := pol.inspectImage(ctx, qi, "image_path", outside, ""); err != nil || f != "raw" {
		t.Errorf("inspectImage(raw) = %q, %v; want raw", f, err)
	}
}

func TestRecoverBogusHandle(t *testing.T) {
	d := newDriver(t, nil)
	ctx := context.Background()
	cfg := drivertest.NewTaskConfig(t, "ghost", map[string]any{"kernel": "k"})
	for _, h := range []*drivers.TaskHandle{
		nil,
		{Version: handleVersion, Config: cfg, DriverState: []byte("{")},
		{Version: handleVersion + 1, Config: cfg, DriverState: []byte("{}")},
		{Version: handleVersion, Config: cfg, DriverState: []byte(`{"qmp_socket":"/nope","state_dir":"/nope","executor":{"executor_pid":999999999,"exit_file":"/nope/exit.json"}}`)},
	} {
		if err := d.RecoverTask(ctx, h); !errors.Is(err, drivers.ErrRecoverFailed) {
			t.Errorf("RecoverTask(%+v) = %v, want ErrRecoverFailed", h, err)
		}
	}
}

// The version probe runs in the background: the first fingerprint does
// not wait for it, a later one carries the version.
func TestFingerprintVersion(t *testing.T) {
	needQEMU(t)
	d := newDriver(t, nil)
	ctx := context.Background()
	fp := d.Fingerprint(ctx)
	if fp.Health != drivers.HealthHealthy || fp.Attributes["driver.qemu"] != "1" {
		t.Fatalf("fingerprint = %+v, want healthy with driver.qemu=1", fp)
	}
	if kvm := fp.Attributes["driver.qemu.kvm"]; kvm != strconv.FormatBool(KVMUsable()) {
		t.Errorf("driver.qemu.kvm = %q, want %v", kvm, KVMUsable())
	}
	testproc.Eventually(t, versionProbeTimeout+5*time.Second, "driver.qemu.version", func() bool {
		if fp.Attributes["driver.qemu.version"] != "" {
			return true
		}
		fp = d.Fingerprint(ctx)
		return false
	})
	if v := fp.Attributes["driver.qemu.version"]; !strings.Contains(v, ".") {
		t.Errorf("driver.qemu.version = %q", v)
	}
	// A missing emulator is "undetected", not an error.
	d2, err := NewDriver(drivers.Options{Config: map[string]any{"emulator": "qemu-system-nope", "executor_path": droverBin}})
	if err != nil {
		t.Fatal(err)
	}
	if fp := d2.Fingerprint(ctx); fp.Health != drivers.HealthUndetected {
		t.Errorf("fingerprint without qemu = %+v, want undetected", fp)
	}
}

// A task dir too deep for a unix socket path gets its QMP socket in a
// short directory (recorded in the handle, removed on destroy); drives are
// attached through their own overlays, read-only when asked.
func TestLongTaskDirAndDrives(t *testing.T) {
	needQEMU(t)
	d := newDriver(t, nil)
	cfg := drivertest.NewTaskConfig(t, "deep", nil)
	cfg.TaskDir = filepath.Join(cfg.AllocDir, strings.Repeat("d", 110))
	if err := os.MkdirAll(cfg.TaskDir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("drover"), 1<<16)
	for name, b := range map[string][]byte{"blank.img": make([]byte, 1<<20), "data.raw": data} {
		if err := os.WriteFile(filepath.Join(cfg.TaskDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Config = map[string]any{"image_path": "blank.img", "accelerator": "tcg", "graceful_shutdown": false,
		"drives": []any{map[string]any{"path": "data.raw", "format": "raw", "readonly": true}}}
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	h, err := d.StartTask(ctx, cfg)
	if err != nil {
		t.Fatalf("StartTask: %v", err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), cfg.ID, true) })
	st := handleState(t, h)
	if !st.OwnSocketDir || len(st.QMPSocket) > maxSocketPath || strings.HasPrefix(st.QMPSocket, cfg.TaskDir) {
		t.Errorf("QMP socket %s (own dir %v) for a %d-byte task dir", st.QMPSocket, st.OwnSocketDir, len(cfg.TaskDir))
	}
	tk, err := d.tasks.Get(cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []raw.BlockInfo
	if err := tk.qmp.do(ctx, "query-block", func(m *raw.Monitor) error {
		var err error
		blocks, err = m.QueryBlock()
		return err
	}); err != nil {
		t.Fatalf("query-block over the short socket: %v", err)
	}
	files := map[string]bool{}
	for _, b := range blocks {
		if b.Inserted != nil {
			files[b.Inserted.File] = b.Inserted.Ro
		}
	}
	want := map[string]bool{filepath.Join(cfg.TaskDir, "qemu-disk0.qcow2"): false, filepath.Join(cfg.TaskDir, "qemu-disk1.qcow2"): true}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("VM block devices (file -> read-only) (-want +got):\n%s", diff)
	}
	if err := d.StopTask(ctx, cfg.ID, time.Minute, ""); err != nil {
		t.Fatalf("StopTask: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(cfg.TaskDir, "data.raw")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("drive image changed (err %v)", err)
	}
	if err := d.DestroyTask(ctx, cfg.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(st.QMPSocket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("short-dir socket %s left after destroy (%v)", st.QMPSocket, err)
	}
}

// A restarted task (same task dir, new ID) boots from the overlay its
// previous run left; an overlay planted there that points outside the
// allowed directories is refused like any image.
func TestOverlayReusedAndChecked(t *testing.T) {
	needQEMU(t)
	d := newDriver(t, nil)
	cfg, _, _ := biosVM(t, d, map[string]any{"graceful_shutdown": false})
	ctx, cancel := context.WithTimeout(context.Background(), vmTimeout)
	defer cancel()
	ov := filepath.Join(cfg.TaskDir, "qemu-disk0.qcow2")
	before, err := os.Stat(ov)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.StopTask(ctx, cfg.ID, time.Minute, ""); err != nil {
		t.Fatal(err)
	}
	if err := d.DestroyTask(ctx, cfg.ID, false); err != nil {
		t.Fatal(err)
	}
	again := *cfg
	again.ID = cfg.AllocID + "/" + cfg.Name + "/" + drivertest.RandID(4)
	if _, err := d.StartTask(ctx, &again); err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), again.ID, true) })
	if after, err := os.Stat(ov); err != nil || !os.SameFile(before, after) {
		t.Errorf("restart replaced the overlay (err %v)", err)
	}
	if err := d.DestroyTask(ctx, again.ID, true); err != nil {
		t.Fatal(err)
	}

	outside := filepath.Join(t.TempDir(), "host.raw")
	if err := os.WriteFile(outside, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	qi, err := qemuImg()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(ov); err != nil {
		t.Fatal(err)
	}
	if err := overlay(ctx, qi, outside, "raw", ov); err != nil {
		t.Fatal(err)
	}
	planted := *cfg
	planted.ID = cfg.AllocID + "/" + cfg.Name + "/" + drivertest.RandID(4)
	if _, err := d.StartTask(ctx, &planted); !errors.Is(err, ErrPathNotAllowed) {
		_ = d.DestroyTask(ctx, planted.ID, true)
		t.Fatalf("start with a planted overlay backed by %s = %v, want ErrPathNotAllowed", outside, err)
	}
}
