package taskrunner

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// shareNode has two H100s of 81559 MiB (the fingerprint's "memory"
// attribute) and two MIG instances whose group gives memory in GiB.
func shareNode() *api.Node {
	mem, gib := int64(81559), int64(10)
	return &api.Node{ID: "n1", NodeResources: &api.NodeResources{Devices: []*api.NodeDeviceResource{
		{Vendor: "nvidia", Type: "gpu", Name: "H100", Attributes: map[string]*api.Attribute{"memory": {IntVal: &mem, Unit: "MiB"}},
			Instances: []*api.NodeDevice{{ID: "GPU-a"}, {ID: "GPU-b"}}},
		{Vendor: "nvidia", Type: "mig", Name: "1g.10gb", Attributes: map[string]*api.Attribute{"memory": {IntVal: &gib, Unit: "GiB"}},
			Instances: []*api.NodeDevice{{ID: "MIG-1"}}},
		{Vendor: "nvidia", Type: "gpu", Name: "T4", Instances: []*api.NodeDevice{{ID: "GPU-nomem"}}},
	}}}
}

func shareEnvOf(devs ...*api.AllocatedDeviceResource) (map[string]string, map[string]string) {
	a, tk, _ := testAlloc()
	a.AllocatedResources.Tasks["web"].Devices = devs
	pipes := map[string]string{}
	for _, d := range devs {
		for _, id := range d.DeviceIDs {
			pipes[id] = "/run/nvidia-mps/" + id
		}
	}
	env := BuildEnv(EnvInput{Alloc: a, Task: tk, Node: shareNode(), Dirs: MountedDirs(), MPSPipeDirs: pipes})
	got := map[string]string{}
	for k, v := range env {
		if strings.HasPrefix(k, "CUDA_MPS_") || k == EnvGPUShare || k == EnvGPUMemoryLimit || k == EnvMPSPipeDirectories {
			got[k] = v
		}
	}
	return got, env
}

func gpuDev(share *api.AllocatedShare, ids ...string) *api.AllocatedDeviceResource {
	return &api.AllocatedDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: ids, Share: share}
}

func TestGPUShareEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		devs []*api.AllocatedDeviceResource
		want map[string]string
	}{
		{"whole GPUs: no share env", []*api.AllocatedDeviceResource{gpuDev(nil, "GPU-a")}, map[string]string{}},
		{"mps by fraction with a burst limit: memory from the fingerprint, threads from the limit",
			[]*api.AllocatedDeviceResource{gpuDev(&api.AllocatedShare{Milli: 250, LimitMilli: 500, Mode: api.ShareModeMPS}, "GPU-a")},
			map[string]string{EnvGPUShare: "0.25", EnvGPUMemoryLimit: "20389", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50",
				"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "GPU-a=20389M", "CUDA_MPS_PIPE_DIRECTORY": "/run/nvidia-mps/GPU-a"}},
		{"mps by memory: the asked memory, threads rounded up",
			[]*api.AllocatedDeviceResource{gpuDev(&api.AllocatedShare{Milli: 126, MemoryMB: 10240, Mode: api.ShareModeMPS}, "GPU-b")},
			map[string]string{EnvGPUShare: "0.126", EnvGPUMemoryLimit: "10240", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "13",
				"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "GPU-b=10240M", "CUDA_MPS_PIPE_DIRECTORY": "/run/nvidia-mps/GPU-b"}},
		{"mps of two GPUs: every GPU's limit, the first one's daemon, each GPU's daemon listed",
			[]*api.AllocatedDeviceResource{gpuDev(&api.AllocatedShare{Milli: 500, Mode: api.ShareModeMPS}, "GPU-b", "GPU-a")},
			map[string]string{EnvGPUShare: "0.5", EnvGPUMemoryLimit: "40779", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50",
				"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "GPU-b=40779M,GPU-a=40779M", "CUDA_MPS_PIPE_DIRECTORY": "/run/nvidia-mps/GPU-b",
				EnvMPSPipeDirectories: "GPU-b=/run/nvidia-mps/GPU-b,GPU-a=/run/nvidia-mps/GPU-a"}},
		{"a tiny mps share still gets one percent",
			[]*api.AllocatedDeviceResource{gpuDev(&api.AllocatedShare{Milli: 1, Mode: api.ShareModeMPS}, "GPU-a")},
			map[string]string{EnvGPUShare: "0.001", EnvGPUMemoryLimit: "81", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "1",
				"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "GPU-a=81M", "CUDA_MPS_PIPE_DIRECTORY": "/run/nvidia-mps/GPU-a"}},
		{"mps of a MIG instance: its group's memory in GiB",
			[]*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "mig", Name: "1g.10gb", DeviceIDs: []string{"MIG-1"},
				Share: &api.AllocatedShare{Milli: 500, Mode: api.ShareModeMPS}}},
			map[string]string{EnvGPUShare: "0.5", EnvGPUMemoryLimit: "5120", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50",
				"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "MIG-1=5120M", "CUDA_MPS_PIPE_DIRECTORY": "/run/nvidia-mps/MIG-1"}},
		{"memory unknown: no memory limits",
			[]*api.AllocatedDeviceResource{gpuDev(&api.AllocatedShare{Milli: 300, Mode: api.ShareModeMPS}, "GPU-nomem")},
			map[string]string{EnvGPUShare: "0.3", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "30", "CUDA_MPS_PIPE_DIRECTORY": "/run/nvidia-mps/GPU-nomem"}},
		{"time-slicing: the share and memory, nothing of MPS",
			[]*api.AllocatedDeviceResource{gpuDev(&api.AllocatedShare{Milli: 250, MemoryMB: 20389, Mode: api.ShareModeTimeSlicing}, "GPU-a")},
			map[string]string{EnvGPUShare: "0.25", EnvGPUMemoryLimit: "20389"}},
		{"a time-sliced and an mps share: the smaller share and memory, MPS for the mps GPU only",
			[]*api.AllocatedDeviceResource{gpuDev(&api.AllocatedShare{Milli: 100, Mode: api.ShareModeTimeSlicing}, "GPU-a"),
				gpuDev(&api.AllocatedShare{Milli: 400, Mode: api.ShareModeMPS}, "GPU-b")},
			map[string]string{EnvGPUShare: "0.1", EnvGPUMemoryLimit: "8155", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "40",
				"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "GPU-b=32623M", "CUDA_MPS_PIPE_DIRECTORY": "/run/nvidia-mps/GPU-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, env := shareEnvOf(tc.devs...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("share env (-want +got):\n%s", diff)
			}
			if _, ok := env["NOMAD_GPU_SHARE"]; ok {
				t.Errorf("NOMAD_GPU_SHARE set: the share env is DROVER_ only")
			}
		})
	}
}

// fakeMPS records what the runner acquires and releases.
type fakeMPS struct {
	mu       sync.Mutex
	err      error
	acquired map[string][]string
	released []string
}

func (f *fakeMPS) Acquire(_ context.Context, holder string, gpus []string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if f.acquired == nil {
		f.acquired = map[string][]string{}
	}
	f.acquired[holder] = gpus
	dirs := map[string]string{}
	for _, g := range gpus {
		dirs[g] = "/data/mps/" + g + "/pipe"
	}
	return dirs, nil
}

func (f *fakeMPS) Release(_ context.Context, holder string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, holder)
}

// nopDriver accepts any config; setup needs no more of a driver.
type nopDriver struct{ drivers.Driver }

func (nopDriver) Name() string                        { return "nop" }
func (nopDriver) ValidateConfig(map[string]any) error { return nil }

func shareRunner(mps MPSDaemons, mounted bool, share *api.AllocatedShare, ids ...string) (*TaskRunner, *api.Allocation, *api.Task) {
	a, tk, _ := testAlloc()
	a.AllocatedResources.Tasks["web"].Devices = []*api.AllocatedDeviceResource{gpuDev(share, ids...)}
	tr := New(Config{Alloc: a, Task: tk, Driver: nopDriver{}, Node: shareNode(), MountedDirs: mounted, MPS: mps})
	return tr, a, tk
}

// A task with MPS shares holds its GPUs' daemons from setup: a driver
// that mounts the task dirs gets each pipe directory mounted at
// /run/nvidia-mps/<uuid> and the env names that; raw_exec-like drivers
// get the host directories.
func TestSetupMPS(t *testing.T) {
	for _, mounted := range []bool{true, false} {
		mps := &fakeMPS{}
		tr, a, tk := shareRunner(mps, mounted, &api.AllocatedShare{Milli: 250, Mode: api.ShareModeMPS}, "GPU-b", "GPU-a")
		tr.cfg.AllocDir = t.TempDir()
		cfg, err := tr.setup(context.Background(), a, tk)
		if err != nil {
			t.Fatalf("mounted=%v: setup: %v", mounted, err)
		}
		if got := mps.acquired[a.ID+"/web"]; !cmp.Equal(got, []string{"GPU-b", "GPU-a"}) {
			t.Errorf("mounted=%v: acquired %v for %s/web, want both GPUs", mounted, mps.acquired, a.ID)
		}
		var mounts []drivers.MountSpec
		for _, m := range cfg.Mounts {
			mounts = append(mounts, *m)
		}
		wantPipe := "/data/mps/GPU-b/pipe"
		var wantMounts []drivers.MountSpec
		if mounted {
			wantPipe = "/run/nvidia-mps/GPU-b"
			wantMounts = []drivers.MountSpec{{HostPath: "/data/mps/GPU-b/pipe", TaskPath: "/run/nvidia-mps/GPU-b"},
				{HostPath: "/data/mps/GPU-a/pipe", TaskPath: "/run/nvidia-mps/GPU-a"}}
		}
		if diff := cmp.Diff(wantMounts, mounts); diff != "" {
			t.Errorf("mounted=%v: mounts (-want +got):\n%s", mounted, diff)
		}
		if got := cfg.Env["CUDA_MPS_PIPE_DIRECTORY"]; got != wantPipe {
			t.Errorf("mounted=%v: CUDA_MPS_PIPE_DIRECTORY %q, want %q", mounted, got, wantPipe)
		}
		if got := cfg.Env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"]; got != "GPU-b=20389M,GPU-a=20389M" {
			t.Errorf("mounted=%v: CUDA_MPS_PINNED_DEVICE_MEM_LIMIT %q", mounted, got)
		}
		// Two MPS GPUs: the task is told a process reaches one daemon.
		if !hasEvent(tr, api.TaskSetup, "MPS shares of 2 GPUs") {
			t.Errorf("mounted=%v: events %v, want the one-daemon-per-process note", mounted, eventMsgs(tr))
		}
	}
}

// A task asking for MPS where the daemons cannot run fails at setup with
// the reason, never runs without them, and holds nothing.
func TestSetupMPSFails(t *testing.T) {
	for name, mps := range map[string]MPSDaemons{
		"no daemons on this client": nil,
		"program missing":           &fakeMPS{err: errors.New("MPS control program not found: nvidia-cuda-mps-control is not on this client's PATH")},
	} {
		t.Run(name, func(t *testing.T) {
			tr, _, _ := shareRunner(mps, true, &api.AllocatedShare{Milli: 250, Mode: api.ShareModeMPS}, "GPU-a")
			tr.cfg.AllocDir = t.TempDir()
			tr.Run(context.Background()) // nopDriver panics if StartTask is reached
			st := tr.State()
			if st.State != api.TaskStateDead || !st.Failed {
				t.Fatalf("task %s failed=%v, want dead and failed", st.State, st.Failed)
			}
			want := "GPU share in MPS mode: "
			if mps != nil {
				want += "MPS control program not found"
			}
			if !hasEvent(tr, api.TaskSetupFailure, want) {
				t.Errorf("events %v, want a setup failure %q", eventMsgs(tr), want)
			}
		})
	}
}

// A time-sliced share starts with the no-isolation warning, and no
// daemon is asked for.
func TestSetupTimeSlicingWarns(t *testing.T) {
	mps := &fakeMPS{}
	tr, a, tk := shareRunner(mps, true, &api.AllocatedShare{Milli: 250, MemoryMB: 20389, Mode: api.ShareModeTimeSlicing}, "GPU-a")
	tr.cfg.AllocDir = t.TempDir()
	cfg, err := tr.setup(context.Background(), a, tk)
	if err != nil {
		t.Fatal(err)
	}
	if !hasEvent(tr, api.TaskSetup, "GPU shared by time-slicing: no isolation of compute or memory") {
		t.Errorf("events %v, want the no-isolation warning", eventMsgs(tr))
	}
	if cfg.Env[EnvGPUShare] != "0.25" || cfg.Env[EnvGPUMemoryLimit] != "20389" || len(mps.acquired) != 0 || len(cfg.Mounts) != 0 {
		t.Errorf("env share %q memory %q, acquired %v, mounts %d; want 0.25, 20389, none, none",
			cfg.Env[EnvGPUShare], cfg.Env[EnvGPUMemoryLimit], mps.acquired, len(cfg.Mounts))
	}
}

// A runner ending with its task dead lets its daemons go; one ending on
// agent shutdown with the task alive keeps them for the next agent.
func TestMPSReleasedOnlyWhenDead(t *testing.T) {
	mps := &fakeMPS{}
	tr, a, _ := shareRunner(mps, false, &api.AllocatedShare{Milli: 250, Mode: api.ShareModeMPS}, "GPU-a")
	tr.state.State = api.TaskStateRunning
	tr.mpsRelease(context.Background())
	if len(mps.released) != 0 {
		t.Fatalf("released %v with the task running", mps.released)
	}
	tr.state.State = api.TaskStateDead
	tr.mpsRelease(context.Background())
	if !cmp.Equal(mps.released, []string{a.ID + "/web"}) {
		t.Errorf("released %v once dead, want %s/web", mps.released, a.ID)
	}
}

func hasEvent(tr *TaskRunner, typ, msg string) bool {
	for _, e := range tr.State().Events {
		if e.Type == typ && strings.Contains(e.DisplayMessage, msg) {
			return true
		}
	}
	return false
}

func eventMsgs(tr *TaskRunner) []string {
	var out []string
	for _, e := range tr.State().Events {
		out = append(out, e.Type+": "+e.DisplayMessage)
	}
	return out
}
