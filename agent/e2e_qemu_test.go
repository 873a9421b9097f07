package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/drivertest/testimage"
	"github.com/drover/drover/internal/testproc"
)

// e2eVMImages returns the directory holding the test VM's kernel and
// initramfs: $DROVER_TEST_IMAGES or build/images, built there if missing.
func e2eVMImages(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("DROVER_TEST_IMAGES")
	if dir == "" {
		abs, err := filepath.Abs(filepath.Join("..", "build", "images"))
		if err != nil {
			t.Fatal(err)
		}
		dir = abs
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, _, err := testimage.WriteVM(ctx, dir); err != nil {
		drivertest.Need(t, !errors.Is(err, testimage.ErrNoKernel) && !errors.Is(err, testimage.ErrNoBusybox), err.Error())
		t.Fatalf("build the test VM images: %v", err)
	}
	return dir
}

// qemuPIDs lists the qemu processes whose command line mentions s.
func qemuPIDs(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		cmd := string(b)
		if strings.Contains(cmd, "qemu-system") && strings.Contains(cmd, s) {
			out = append(out, pid)
		}
	}
	return out
}

// TestE2EQEMU runs examples/vm-qemu.hcl on a dev agent started from the
// built binary: the VM's alloc runs, the guest's ready line reaches the
// task's logs, its port answers through the port_map forward, `job stop`
// powers it off over QMP (the guest's shutdown line is logged) and no
// qemu process is left.
func TestE2EQEMU(t *testing.T) {
	drivertest.NeedBinary(t, "qemu-system-x86_64")
	drivertest.NeedBinary(t, "qemu-img")
	images := e2eVMImages(t)
	cfgFile := filepath.Join(t.TempDir(), "qemu.hcl")
	cfg := fmt.Sprintf("plugin \"qemu\" {\n  config {\n    image_paths = [%q]\n  }\n}\n", images)
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	p := startAgent(t, "-dev", "-http-port", strconv.Itoa(port), "-config", cfgFile)
	waitLeader(t, p, base)

	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(droverBin(t), args...)
		cmd.Env = append(os.Environ(), "DROVER_ADDR="+base)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("drover %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	cli("job", "run", "-detach",
		"-var", "kernel="+filepath.Join(images, testimage.VMKernelFile),
		"-var", "initrd="+filepath.Join(images, testimage.VMInitrdFile),
		filepath.Join("..", "examples", "vm-qemu.hcl"))

	// Blocking queries until the alloc runs.
	var alloc api.Allocation
	var idx uint64
	deadline := time.Now().Add(3 * time.Minute)
	for alloc.ID == "" {
		if time.Now().After(deadline) {
			t.Fatal("the VM's allocation did not run within 3 minutes")
		}
		var stubs []*api.AllocListStub
		idx = getBlocking(t, fmt.Sprintf("%s/v1/job/vm/allocations?index=%d&wait=5s", base, idx), &stubs)
		for _, s := range stubs {
			if s.ClientStatus == api.AllocClientStatusRunning {
				call(t, "GET", base+"/v1/allocation/"+s.ID, "", &alloc)
			}
			if s.ClientStatus == api.AllocClientStatusFailed {
				var a api.Allocation
				call(t, "GET", base+"/v1/allocation/"+s.ID, "", &a)
				b, _ := json.Marshal(a.TaskStates)
				t.Fatalf("the VM's allocation failed: %s", b)
			}
		}
	}
	// Whatever happens to the agent, the test leaves no VM behind.
	allocID := alloc.ID
	t.Cleanup(func() {
		for _, pid := range qemuPIDs(allocID) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	logs := func() string {
		r, err := http.Get(base + "/v1/client/fs/logs/" + alloc.ID + "?task=vm&type=stdout&plain=true")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		if r.StatusCode != 200 {
			t.Fatalf("logs = %d %s", r.StatusCode, b)
		}
		return string(b)
	}
	testproc.Eventually(t, 4*time.Minute, "the guest's ready line in the task's logs", func() bool {
		return strings.Contains(logs(), testimage.VMReadyMarker)
	})

	// The group's "http" port is forwarded to the guest's httpd.
	hostPort := 0
	if ar := alloc.AllocatedResources; ar != nil {
		for _, pt := range ar.Shared.Ports {
			if pt.Label == "http" {
				hostPort = pt.Value
			}
		}
	}
	if hostPort == 0 {
		t.Fatalf("alloc has no http port: %+v", alloc.AllocatedResources)
	}
	var body string
	testproc.Eventually(t, time.Minute, "GET the guest through the forwarded port", func() bool {
		r, err := (&http.Client{Timeout: 10 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/", hostPort))
		if err != nil {
			return false
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		return r.StatusCode == 200
	})
	if strings.TrimSpace(body) != testimage.VMHTTPBody {
		t.Errorf("guest answered %q, want %q", body, testimage.VMHTTPBody)
	}
	if pids := qemuPIDs(alloc.ID); len(pids) != 1 {
		t.Errorf("qemu processes of the alloc: %v, want one", pids)
	}

	cli("job", "stop", "-detach", "vm")
	testproc.Eventually(t, 3*time.Minute, "the allocation to complete after job stop", func() bool {
		var a api.Allocation
		call(t, "GET", base+"/v1/allocation/"+alloc.ID, "", &a)
		alloc = a
		return a.ClientTerminalStatus()
	})
	if out := logs(); !strings.Contains(out, testimage.VMShutdownMarker) {
		t.Errorf("the task's logs lack the guest's %q line (no graceful power-down?):\n%s", testimage.VMShutdownMarker, out)
	}
	if ts := alloc.TaskStates["vm"]; ts == nil || ts.State != api.TaskStateDead {
		t.Errorf("task state after stop = %+v, want dead", ts)
	}
	testproc.Eventually(t, 30*time.Second, "no qemu process left", func() bool { return len(qemuPIDs(alloc.ID)) == 0 })
	p.stop(t)
}

// getBlocking GETs url into out and returns the response's index.
func getBlocking(t *testing.T, url string, out any) uint64 {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if err := json.NewDecoder(r.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	idx, _ := strconv.ParseUint(r.Header.Get(api.HeaderIndex), 10, 64)
	return idx
}
