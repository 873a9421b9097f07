package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// An alloc holding GPUs idle past its idle_timeout, in a queue whose
// idle_action is preempt, is evicted for pending GPU work of the same
// priority ("idle GPU reclaim"); not before its timeout, not where the
// queue only flags, and not for work that asks for no devices.
func TestPreemptIdleGPUs(t *testing.T) {
	cases := []struct {
		name    string
		idleFor time.Duration // 0: busy
		action  string
		gpus    int // the pending job's ask
		evicted bool
	}{
		{"idle past timeout", 3 * time.Hour, api.IdleActionPreempt, 4, true},
		{"idle under timeout", time.Hour, api.IdleActionPreempt, 4, false},
		{"busy", 0, api.IdleActionPreempt, 4, false},
		{"queue only flags", 3 * time.Hour, api.IdleActionFlag, 4, false},
		{"pending work asks no GPU", 3 * time.Hour, api.IdleActionPreempt, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := newMemState()
			// All of the node's CPU and GPUs go to the notebook.
			st.addNode(gangGPUNode("g", 4))
			st.upsertQueue(&api.Queue{Name: "nb", IdleTimeout: 2 * time.Hour, IdleAction: c.action})
			nb := testJob("nb", api.JobTypeService, 1, 64000, 1024)
			nb.Queue = "nb"
			st.upsertJob(nb)
			a := runningAlloc(nb, 0, "node-g", 64000, testNow.Add(-5*time.Hour))
			a.AllocatedResources.Tasks["server"].Devices = []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100",
				DeviceIDs: []string{"g-GPU-0", "g-GPU-1", "g-GPU-2", "g-GPU-3"}}}
			a.GPUUsage = &api.GPUUsage{GPUs: 4}
			if c.idleFor > 0 {
				a.GPUUsage.IdleSince = testNow.Add(-c.idleFor).UnixNano()
			}
			st.upsertAlloc(a)
			train := gangJob("train", 1, c.gpus, 0)
			train.TaskGroups[0].Gang = nil
			train.Type = api.JobTypeService
			train.TaskGroups[0].Tasks[0].Resources.CPU = 1000
			st.upsertJob(train)
			res, err := Schedule(st, testEval(train, 1), Options{Now: testNow, Preemption: &PreemptionConfig{ServiceSchedulerEnabled: true}})
			if err != nil {
				t.Fatal(err)
			}
			got := res.Plan.NodePreemptions["node-g"]
			if (len(got) == 1) != c.evicted {
				t.Fatalf("evicted %d allocs, want evicted=%v", len(got), c.evicted)
			}
			if c.evicted && !strings.HasPrefix(got[0].DesiredDescription, api.IdleReclaimDescription) {
				t.Errorf("eviction reason %q, want %q first", got[0].DesiredDescription, api.IdleReclaimDescription)
			}
		})
	}
}

// A group's min_runtime protects its allocs from preemption as the job's
// does, and overrides it.
func TestPreemptGroupMinRuntime(t *testing.T) {
	for _, c := range []struct {
		name       string
		job, group time.Duration
		evicted    bool
	}{
		{"none", 0, 0, true},
		{"group protects", 0, 2 * time.Hour, false},
		{"group shorter than job", 2 * time.Hour, 30 * time.Minute, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newMemState()
			st.addNode(testNode("1", "dc1", 1000, 4096))
			low := testJob("low", api.JobTypeService, 1, 1000, 64)
			low.Priority, low.MinRuntime, low.TaskGroups[0].MinRuntime = 20, c.job, c.group
			st.upsertJob(low)
			st.upsertAlloc(runningAlloc(low, 0, "node-1", 1000, testNow.Add(-time.Hour)))
			high := testJob("high", api.JobTypeService, 1, 1000, 64)
			high.Priority = 80
			st.upsertJob(high)
			res, err := Schedule(st, testEval(high, 1), Options{Now: testNow, Preemption: &PreemptionConfig{ServiceSchedulerEnabled: true}})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(res.Plan.NodePreemptions["node-1"]) == 1; got != c.evicted {
				t.Errorf("evicted = %v, want %v", got, c.evicted)
			}
		})
	}
}
