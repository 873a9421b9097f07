package sim

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

func TestSimGPUUsage(t *testing.T) {
	now := time.Unix(1000, 0)
	a := &api.Allocation{ID: "a", TaskGroup: "nb", Job: &api.Job{TaskGroups: []*api.TaskGroup{
		{Name: "other", Tasks: []*api.Task{{Env: map[string]string{api.SimGPUUtilEnv: "50"}}}},
		{Name: "nb", Tasks: []*api.Task{{Env: map[string]string{api.SimGPUUtilEnv: "0"}}}},
	}}, AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
		"t": {Devices: []*api.AllocatedDeviceResource{{Type: "gpu", DeviceIDs: []string{"g0", "g1"}}}}}}}
	decode := func() *allocStub {
		b, _ := json.Marshal(a)
		var s allocStub
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	u := decode().simGPUUsage(now)
	if u == nil || u.GPUs != 2 || u.UtilPercent != 0 || u.IdleSince != now.UnixNano() || !u.Simulated {
		t.Errorf("DROVER_SIM_GPU_UTIL=0: %+v, want 2 GPUs idle since now", u)
	}
	a.Job.TaskGroups[1].Tasks[0].Env = nil
	if u := decode().simGPUUsage(now); u == nil || u.UtilPercent != 100 || u.IdleSince != 0 {
		t.Errorf("no env: %+v, want busy at 100%%", u)
	}
	a.AllocatedResources.Tasks["t"].Devices = nil
	if u := decode().simGPUUsage(now); u != nil {
		t.Errorf("no GPUs: %+v, want nil", u)
	}
}
