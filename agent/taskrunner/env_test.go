package taskrunner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/api"
)

func testAlloc() (*api.Allocation, *api.Task, *api.Node) {
	t := &api.Task{Name: "web", Meta: map[string]string{"Owner": "ops"}, Env: map[string]string{
		"URL": "http://${NOMAD_ADDR_http}/x", "HOST": "${attr.unique.hostname}", "DC": "${node.datacenter}", "RAW": "${nope.x}"}}
	job := &api.Job{ID: "shop", Name: "shop", Region: "eu", Meta: map[string]string{"version": "3"},
		TaskGroups: []*api.TaskGroup{{Name: "api", Tasks: []*api.Task{t}, Meta: map[string]string{"tier": "front"}}}}
	a := &api.Allocation{ID: "11112222-3333-4444-5555-666677778888", Name: "shop.api[4]", Namespace: "prod", JobID: "shop", Job: job, TaskGroup: "api",
		AllocatedResources: &api.AllocatedResources{
			Tasks: map[string]*api.AllocatedTaskResources{"web": {
				Cpu: api.AllocatedCpuResources{CpuShares: 500}, Memory: api.AllocatedMemoryResources{MemoryMB: 256, MemoryMaxMB: 512},
				Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"GPU-a", "GPU-b"}}},
			}},
			Shared: api.AllocatedSharedResources{Ports: []api.AllocatedPort{{Label: "http", Value: 23456, To: 8080, HostIP: "10.0.0.5"}}},
		}}
	n := &api.Node{ID: "node-1", Name: "n1", Datacenter: "dc9", NodeClass: "gpu", NodePool: "ml",
		Attributes: map[string]string{"kernel.name": "linux", "unique.hostname": "box"}, Meta: map[string]string{"rack": "r7"},
		NodeResources: &api.NodeResources{Devices: []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100",
			Instances: []*api.NodeDevice{{ID: "GPU-z", DevicePaths: []string{"/dev/nvidia0"}},
				{ID: "GPU-a", DevicePaths: []string{"/dev/nvidia1"}}, {ID: "GPU-b", DevicePaths: []string{"/dev/nvidia2"}}}}}}}
	return a, t, n
}

func TestBuildEnv(t *testing.T) {
	a, tk, n := testAlloc()
	env := BuildEnv(EnvInput{Alloc: a, Task: tk, Node: n, Dirs: HostDirs("/data/alloc/x", "web")})
	want := map[string]string{
		"ALLOC_ID": a.ID, "ALLOC_NAME": "shop.api[4]", "ALLOC_INDEX": "4", "JOB_ID": "shop", "JOB_NAME": "shop",
		"GROUP_NAME": "api", "TASK_NAME": "web", "TASK_DIR": "/data/alloc/x/web/local", "ALLOC_DIR": "/data/alloc/x/alloc",
		"SECRETS_DIR": "/data/alloc/x/web/secrets", "NAMESPACE": "prod", "REGION": "eu", "DC": "dc9", "NODE_ID": "node-1",
		"NODE_NAME": "n1", "CPU_LIMIT": "500", "MEMORY_LIMIT": "256", "MEMORY_MAX_LIMIT": "512",
		"PORT_http": "8080", "HOST_PORT_http": "23456", "IP_http": "10.0.0.5", "ADDR_http": "10.0.0.5:23456",
		"META_version": "3", "META_VERSION": "3", "META_tier": "front", "META_TIER": "front", "META_Owner": "ops", "META_OWNER": "ops",
		"GPU_IDS": "GPU-a,GPU-b",
	}
	for k, v := range want {
		for _, p := range []string{"DROVER_", "NOMAD_"} {
			if got := env[p+k]; got != v {
				t.Errorf("%s%s = %q, want %q", p, k, got, v)
			}
		}
	}
	for k, v := range map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-a,GPU-b", "NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-b",
		"URL": "http://10.0.0.5:23456/x", "HOST": "box", "DC": "dc9", "RAW": "${nope.x}"} {
		if got := env[k]; got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	mounted := BuildEnv(EnvInput{Alloc: a, Task: tk, Node: n, Dirs: MountedDirs()})
	if mounted["NOMAD_TASK_DIR"] != "/local" || mounted["DROVER_ALLOC_DIR"] != "/alloc" || mounted["NOMAD_SECRETS_DIR"] != "/secrets" {
		t.Errorf("mounted dirs env = %q %q %q", mounted["NOMAD_TASK_DIR"], mounted["DROVER_ALLOC_DIR"], mounted["NOMAD_SECRETS_DIR"])
	}
}

func TestGPUDeviceSpecs(t *testing.T) {
	a, _, n := testAlloc()
	dev := t.TempDir()
	for _, f := range []string{"dev/nvidia1", "dev/nvidia2", "dev/nvidia0", "dev/nvidiactl", "dev/nvidia-uvm"} {
		p := filepath.Join(dev, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	specs := GPUDeviceSpecs(a.AllocatedResources.Tasks["web"], n, dev)
	var got []string
	for _, s := range specs {
		got = append(got, s.HostPath)
	}
	// GPU-a and GPU-b are /dev/nvidia1 and 2; nvidia-uvm-tools is absent.
	want := []string{"/dev/nvidia1", "/dev/nvidia2", "/dev/nvidiactl", "/dev/nvidia-uvm"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("device specs (-want +got):\n%s", diff)
	}
	if s := GPUDeviceSpecs(&api.AllocatedTaskResources{}, n, dev); s != nil {
		t.Errorf("specs without GPUs = %v, want none", s)
	}
}

// TestGPUDeviceSpecsFromFingerprint: a task's device nodes are the
// fingerprinted paths of its instances, whatever their position: the GPU
// with minor 5 listed first gets /dev/nvidia5, MIG instances their GPU's
// node once and their own capability nodes; then the control devices.
// The task sees the instances' UUIDs.
func TestGPUDeviceSpecsFromFingerprint(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"dev/nvidia0", "dev/nvidia3", "dev/nvidia5", "dev/nvidiactl", "dev/nvidia-uvm", "dev/nvidia-uvm-tools",
		"dev/nvidia-caps/nvidia-cap30", "dev/nvidia-caps/nvidia-cap31", "dev/nvidia-caps/nvidia-cap39", "dev/nvidia-caps/nvidia-cap40"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	minor := func(n int) *int { return &n }
	n := &api.Node{NodeResources: &api.NodeResources{Devices: []*api.NodeDeviceResource{
		{Vendor: "nvidia", Type: "gpu", Name: "H100", Instances: []*api.NodeDevice{
			{ID: "GPU-h", Minor: minor(5), DevicePaths: []string{"/dev/nvidia5"}},
			{ID: "GPU-x", Minor: minor(0), DevicePaths: []string{"/dev/nvidia0"}},
			{ID: "GPU-nominor"}}},
		{Vendor: "nvidia", Type: "mig", Name: "A100 MIG 1g.5gb", Instances: []*api.NodeDevice{
			{ID: "MIG-1", Minor: minor(3), DevicePaths: []string{"/dev/nvidia3", "/dev/nvidia-caps/nvidia-cap30", "/dev/nvidia-caps/nvidia-cap31"}},
			{ID: "MIG-2", Minor: minor(3), DevicePaths: []string{"/dev/nvidia3", "/dev/nvidia-caps/nvidia-cap39", "/dev/nvidia-caps/nvidia-cap40"}}}},
	}}}
	for _, c := range []struct {
		name  string
		devs  []*api.AllocatedDeviceResource
		paths []string
		ids   string
	}{
		{"gpu with minor 5 at position 0", []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"GPU-h"}}},
			[]string{"/dev/nvidia5", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}, "GPU-h"},
		{"gpu without a fingerprinted minor", []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"GPU-nominor"}}},
			[]string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}, "GPU-nominor"},
		{"two MIG instances of one GPU", []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "mig", Name: "A100 MIG 1g.5gb", DeviceIDs: []string{"MIG-1", "MIG-2"}}},
			[]string{"/dev/nvidia3", "/dev/nvidia-caps/nvidia-cap30", "/dev/nvidia-caps/nvidia-cap31", "/dev/nvidia-caps/nvidia-cap39",
				"/dev/nvidia-caps/nvidia-cap40", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}, "MIG-1,MIG-2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := &api.Task{Name: "train"}
			a := &api.Allocation{ID: "a1", AllocatedResources: &api.AllocatedResources{
				Tasks: map[string]*api.AllocatedTaskResources{"train": {Devices: c.devs}}}}
			var got []string
			for _, s := range GPUDeviceSpecs(a.AllocatedResources.Tasks["train"], n, root) {
				got = append(got, s.HostPath)
				if s.TaskPath != s.HostPath || s.Vendor != "nvidia" || s.Permissions != "rwm" {
					t.Errorf("spec %+v: want the host path in the task, vendor nvidia, rwm", s)
				}
			}
			if diff := cmp.Diff(c.paths, got); diff != "" {
				t.Errorf("device specs (-want +got):\n%s", diff)
			}
			env := BuildEnv(EnvInput{Alloc: a, Task: tk, Node: n, Dirs: MountedDirs()})
			for _, k := range []string{"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"} {
				if env[k] != c.ids {
					t.Errorf("%s = %q, want %q", k, env[k], c.ids)
				}
			}
		})
	}
}

func TestInterpolate(t *testing.T) {
	_, _, n := testAlloc()
	env := map[string]string{"NOMAD_ALLOC_ID": "A1", "DROVER_TASK_DIR": "/local", "X": "y"}
	cases := []struct{ in, want string }{
		{"${NOMAD_ALLOC_ID}", "A1"},
		{"dir=${DROVER_TASK_DIR}/f", "dir=/local/f"},
		{"${node.unique.name}-${node.unique.id}", "n1-node-1"},
		{"${node.datacenter}/${node.class}/${node.pool}", "dc9/gpu/ml"},
		{"${attr.kernel.name}", "linux"},
		{"${meta.rack}", "r7"},
		{`${env["X"]}`, "y"},
		{"${ X }", "y"},
		{"${unknown}", "${unknown}"},
		{"${attr.missing}", "${attr.missing}"},
		{"no refs", "no refs"},
		{"unterminated ${X", "unterminated ${X"},
		{"$${X}", "$y"},
	}
	for _, c := range cases {
		if got := Interpolate(c.in, env, n); got != c.want {
			t.Errorf("Interpolate(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	cfg := map[string]any{"command": "${X}", "args": []any{"${NOMAD_ALLOC_ID}", 3}, "nested": map[string]any{"k": []string{"${meta.rack}"}}, "n": 1.5}
	got := InterpolateConfig(cfg, env, n)
	want := map[string]any{"command": "y", "args": []any{"A1", 3}, "nested": map[string]any{"k": []string{"r7"}}, "n": 1.5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("InterpolateConfig (-want +got):\n%s", diff)
	}
	if cfg["command"] != "${X}" {
		t.Error("InterpolateConfig modified its input")
	}
}

func TestRenderTemplates(t *testing.T) {
	_, _, n := testAlloc()
	dir := t.TempDir()
	env := map[string]string{"NOMAD_ALLOC_ID": "A1", "PORT": "8080"}
	extra, err := RenderTemplates([]*api.Template{
		{EmbeddedTmpl: "port={{ env \"PORT\" }}\nid=${NOMAD_ALLOC_ID}\nos={{ attr \"kernel.name\" }}\n", DestPath: "local/conf/app.ini"},
		{EmbeddedTmpl: "A=1\n# c\nB = \"two\"\n", DestPath: "secrets/file.env", Envvars: true, Perms: "0400"},
		{EmbeddedTmpl: "[[ env \"PORT\" ]]", DestPath: "/local/delims", LeftDelim: "[[", RightDelim: "]]"},
	}, dir, env, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"A": "1", "B": "two"}, extra); diff != "" {
		t.Errorf("env from template (-want +got):\n%s", diff)
	}
	for p, want := range map[string]string{"local/conf/app.ini": "port=8080\nid=A1\nos=linux\n", "local/delims": "8080"} {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q (%v), want %q", p, b, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "secrets/file.env")); err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("secrets/file.env mode = %v (%v), want 0400", fi.Mode().Perm(), err)
	}
	for _, bad := range []string{"../escape", "local/../../escape"} {
		_, err := RenderTemplates([]*api.Template{{EmbeddedTmpl: "x", DestPath: bad}}, dir, env, n, nil)
		if err == nil || !strings.Contains(err.Error(), "escapes") {
			t.Errorf("DestPath %q: err = %v, want an escape error", bad, err)
		}
	}
	if _, err := RenderTemplates([]*api.Template{{EmbeddedTmpl: "{{ key \"x\" }}", DestPath: "local/x"}}, dir, env, n, nil); err == nil {
		t.Error("unknown template function: want an error")
	}
}

func TestPortIPFallsBackToNodeAddress(t *testing.T) {
	a, tk, n := testAlloc()
	a.AllocatedResources.Shared.Ports = []api.AllocatedPort{{Label: "db", Value: 25000}}
	n.Attributes["unique.network.ip-address"] = "192.0.2.7"
	env := BuildEnv(EnvInput{Alloc: a, Task: tk, Node: n, Dirs: MountedDirs()})
	for k, v := range map[string]string{"NOMAD_PORT_db": "25000", "DROVER_HOST_PORT_db": "25000", "NOMAD_IP_db": "192.0.2.7", "DROVER_ADDR_db": "192.0.2.7:25000"} {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
}
