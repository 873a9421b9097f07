package containerd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/oci"
	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

func TestParseTaskConfig(t *testing.T) {
	got, err := ParseTaskConfig(map[string]any{
		"image":      "busybox",
		"command":    "/bin/sh",
		"args":       []any{"-c", "x"},
		"entrypoint": []string{"/init"},
		"env":        []any{map[string]any{"A": "1"}},
		"cap_add":    []any{"net_admin"},
		"cap_drop":   []any{"CAP_CHOWN"},
		"mounts":     []any{map[string]any{"source": "local/d", "target": "/d", "options": []any{"ro"}}},
		"auth":       map[string]any{"username": "u", "password": "p"},
		"pids_limit": float64(64),
		"seccomp":    false,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &TaskConfig{
		Image: "busybox", Command: "/bin/sh", Args: []string{"-c", "x"}, Entrypoint: []string{"/init"},
		Env: map[string]string{"A": "1"}, CapAdd: []string{"CAP_NET_ADMIN"}, CapDrop: []string{"CAP_CHOWN"},
		Mounts: []Mount{{Type: "bind", Source: "local/d", Target: "/d", Options: []string{"ro"}}},
		Auth:   &Auth{Username: "u", Password: "p"}, PidsLimit: 64, Seccomp: false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ParseTaskConfig (-want +got):\n%s", diff)
	}
}

func TestParseTaskConfigErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{}, "image: required"},
		{map[string]any{"image": 1}, "image: want a string"},
		{map[string]any{"image": "x", "bogus": 1}, "bogus: unknown key"},
		{map[string]any{"image": "x", "args": "a"}, "args: want a list"},
		{map[string]any{"image": "x", "env": map[string]any{"A": 1}}, `env: value of "A"`},
		{map[string]any{"image": "x", "mounts": []any{map[string]any{"target": "/x"}}}, "mounts[0].source: required"},
		{map[string]any{"image": "x", "mounts": []any{map[string]any{"type": "nfs", "target": "/x"}}}, "mounts[0].type"},
		{map[string]any{"image": "x", "mounts": []any{map[string]any{"source": "a", "target": "/x", "oops": 1}}}, "mounts[0].oops: unknown key"},
		{map[string]any{"image": "x", "auth": map[string]any{"token": "t"}}, "auth.token: unknown key"},
		{map[string]any{"image": "x", "pids_limit": 1.5}, "pids_limit: want an integer"},
		{map[string]any{"image": "x", "privileged": "yes"}, "privileged: want a bool"},
	}
	for _, tc := range tests {
		_, err := ParseTaskConfig(tc.cfg)
		if !errors.Is(err, drivers.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseTaskConfig(%v) = %v, want ErrInvalidConfig naming %q", tc.cfg, err, tc.want)
		}
	}
}

func TestClientPolicy(t *testing.T) {
	c, err := ParseClientConfig(map[string]any{"allow_caps": []any{"net_admin"}, "namespace": "ns"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace != "ns" || c.AllowPrivileged {
		t.Fatalf("config %+v", c)
	}
	// Seccomp is true in every TaskConfig ParseTaskConfig returns unless
	// the job turns it off.
	if err := c.checkAllowed(&TaskConfig{Seccomp: true, CapAdd: []string{"CAP_NET_ADMIN"}}); err != nil {
		t.Errorf("allowed cap refused: %v", err)
	}
	if err := c.checkAllowed(&TaskConfig{CapAdd: []string{"CAP_SYS_ADMIN"}}); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Errorf("cap outside allow_caps: %v", err)
	}
	if err := c.checkAllowed(&TaskConfig{Seccomp: true, Privileged: true}); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Errorf("privileged without allow_privileged: %v", err)
	}
	// Turning the seccomp filter off or naming a profile weakens the
	// sandbox as much: allow_privileged too.
	if err := c.checkAllowed(&TaskConfig{Seccomp: false}); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Errorf("seccomp = false without allow_privileged: %v", err)
	}
	if err := c.checkAllowed(&TaskConfig{Seccomp: true, SeccompProfile: "local/p.json"}); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Errorf("seccomp_profile without allow_privileged: %v", err)
	}
	all, _ := ParseClientConfig(map[string]any{"allow_caps": []any{"all"}, "allow_privileged": true})
	if err := all.checkAllowed(&TaskConfig{Privileged: true, CapAdd: []string{"CAP_SYS_ADMIN"}, SeccompProfile: "p.json"}); err != nil {
		t.Errorf("allow all: %v", err)
	}
	if _, err := ParseClientConfig(map[string]any{"adress": "/x"}); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Errorf("typo in client config: %v", err)
	}
}

func TestContainerID(t *testing.T) {
	if got := ContainerID("5b3c9d2e-1111-2222-3333-444455556666/web/0a1b2c3d"); got != "5b3c9d2e-1111-2222-3333-444455556666-web-0a1b2c3d" {
		t.Errorf("ContainerID = %q", got)
	}
	long := ContainerID("5b3c9d2e-1111-2222-3333-444455556666/" + strings.Repeat("very-long-task-name", 5) + "/0a1b2c3d")
	if len(long) > 76 || long == ContainerID("5b3c9d2e-1111-2222-3333-444455556666/"+strings.Repeat("very-long-task-name", 5)+"/ffffffff") {
		t.Errorf("long ContainerID %q: too long or not unique", long)
	}
}

func TestProcessArgs(t *testing.T) {
	tests := []struct {
		tc       TaskConfig
		want     []string
		argsOnly bool
	}{
		{TaskConfig{}, nil, false},
		{TaskConfig{Args: []string{"a"}}, []string{"a"}, true},
		{TaskConfig{Command: "c", Args: []string{"a"}}, []string{"c", "a"}, false},
		{TaskConfig{Entrypoint: []string{"e"}, Command: "c", Args: []string{"a"}}, []string{"e", "c", "a"}, false},
	}
	for _, tc := range tests {
		got, argsOnly := processArgs(&tc.tc)
		if !cmp.Equal(got, tc.want) || argsOnly != tc.argsOnly {
			t.Errorf("processArgs(%+v) = %v, %v; want %v, %v", tc.tc, got, argsOnly, tc.want, tc.argsOnly)
		}
	}
}

func TestMemoryLimits(t *testing.T) {
	cfg := &drivers.TaskConfig{Resources: &api.AllocatedTaskResources{Memory: api.AllocatedMemoryResources{MemoryMB: 100}}}
	if l, r := memoryLimits(cfg); l != 100<<20 || r != 0 {
		t.Errorf("plain: %d %d", l, r)
	}
	cfg.MemoryMaxMB = 300
	if l, r := memoryLimits(cfg); l != 300<<20 || r != 100<<20 {
		t.Errorf("oversubscribed: %d %d", l, r)
	}
	cfg.MemoryMaxMB = 0
	cfg.Resources.Memory.MemoryMaxMB = -1
	if l, r := memoryLimits(cfg); l != 0 || r != 100<<20 {
		t.Errorf("memory_max = -1: %d %d, want no limit and a 100 MiB reservation", l, r)
	}
}

// nvidiaRoot is a fake host root with NVIDIA libraries, nvidia-smi and a
// /dev/nvidiactl that is a symlink to a real char device.
func nvidiaRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range []string{"usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54", "usr/lib/x86_64-linux-gnu/libcuda.so.1", "usr/bin/nvidia-smi"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	// /dev/nvidiactl of the fake root is a symlink to a real char device.
	if err := os.Symlink("/dev/null", filepath.Join(root, "dev", "nvidiactl")); err != nil {
		t.Fatal(err)
	}
	return root
}

// The NVIDIA libraries of a fake host root are mounted read-only and the
// device list's nodes (a GPU's and a control device) exposed when the
// task has an NVIDIA device.
func TestNvidiaLibrariesAndDevices(t *testing.T) {
	root := nvidiaRoot(t)
	s := &oci.Spec{Linux: &specs.Linux{}}
	// As the client builds the list: the GPU's node, then the control
	// devices present on the host.
	gpus := []*drivers.DeviceSpec{{HostPath: "/dev/zero", TaskPath: "/dev/nvidia0", Vendor: drivers.VendorNvidia},
		{HostPath: filepath.Join(root, "dev", "nvidiactl"), TaskPath: "/dev/nvidiactl", Permissions: "rwm", Vendor: drivers.VendorNvidia}}
	if err := withTaskDevices(root, gpus)(context.Background(), nil, nil, s); err != nil {
		t.Fatal(err)
	}
	var dests []string
	for _, m := range s.Mounts {
		dests = append(dests, m.Destination)
		if !cmp.Equal(m.Options[:3], []string{"rbind", "rprivate", "ro"}) {
			t.Errorf("mount %s options %v, want read-only bind", m.Destination, m.Options)
		}
	}
	want := []string{"/usr/bin/nvidia-smi", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54"}
	if diff := cmp.Diff(want, dests); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	var devs []string
	for _, d := range s.Linux.Devices {
		devs = append(devs, d.Path)
	}
	if diff := cmp.Diff([]string{"/dev/nvidia0", "/dev/nvidiactl"}, devs); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	if n := len(s.Linux.Resources.Devices); n != 2 || !s.Linux.Resources.Devices[0].Allow {
		t.Errorf("device cgroup rules %+v", s.Linux.Resources.Devices)
	}
	// A task without NVIDIA devices gets no libraries.
	s2 := &oci.Spec{Linux: &specs.Linux{}}
	if err := withNvidiaLibraries(root, []*drivers.DeviceSpec{{HostPath: "/dev/fuse"}})(context.Background(), nil, nil, s2); err != nil || len(s2.Mounts) != 0 {
		t.Errorf("non-NVIDIA device: mounts %v, err %v", s2.Mounts, err)
	}
}

// TestDevicesComeFromTheDeviceList: the container's device nodes are the
// task's device list and nothing else (the driver adds no control devices
// of its own), and whether the NVIDIA libraries are mounted follows the
// list's NVIDIA marks, not the names of the nodes.
func TestDevicesComeFromTheDeviceList(t *testing.T) {
	root := nvidiaRoot(t)
	for _, c := range []struct {
		name string
		devs []*drivers.DeviceSpec
		want []string // device nodes in the container
		libs bool
	}{
		{"nvidia device at any path", []*drivers.DeviceSpec{{HostPath: "/dev/null", TaskPath: "/dev/gpu-a", Vendor: drivers.VendorNvidia}},
			[]string{"/dev/gpu-a"}, true},
		{"unmarked node named nvidia", []*drivers.DeviceSpec{{HostPath: "/dev/null", TaskPath: "/dev/nvidia0"}},
			[]string{"/dev/nvidia0"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &oci.Spec{Linux: &specs.Linux{}}
			if err := withTaskDevices(root, c.devs)(context.Background(), nil, nil, s); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range s.Linux.Devices {
				got = append(got, d.Path)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
			if n := len(s.Linux.Resources.Devices); n != len(c.want) {
				t.Errorf("%d device cgroup rules, want %d: %+v", n, len(c.want), s.Linux.Resources.Devices)
			}
			if got := len(s.Mounts) > 0; got != c.libs {
				t.Errorf("NVIDIA libraries mounted = %v (%v), want %v", got, s.Mounts, c.libs)
			}
		})
	}
}

// A host device passed as TaskConfig.Devices is usable at its task path.
func TestDevicePassthrough(t *testing.T) {
	d := newDriver(t, nil)
	cfg := shTask(t, `echo data > /dev/gpu0 && head -c 4 /dev/zero0 | wc -c && ls -l /dev/gpu0 | cut -c1`)
	cfg.Devices = []*drivers.DeviceSpec{
		{HostPath: "/dev/null", TaskPath: "/dev/gpu0", Permissions: "rwm"},
		{HostPath: "/dev/zero", TaskPath: "/dev/zero0", Permissions: "r"},
	}
	startTask(t, d, cfg)
	if res := waitExit(t, d, cfg.ID, 30*time.Second); !res.Successful() {
		t.Fatalf("exit %+v stderr %q", res, readLog(t, cfg, "stderr"))
	}
	if got := readLog(t, cfg, "stdout"); got != "4\nc\n" {
		t.Fatalf("stdout %q, want 4 bytes read and a char device", got)
	}
}
