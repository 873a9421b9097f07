package scheduler

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// When a placement needs two victims, both are preempted, once each: the
// pruning pass once overwrote its own victim list (kept aliased victims),
// evicting the smaller victim twice and never the bigger one, while the
// node's usage forgot the bigger one, so the plan overcommitted the node.
func TestPreemptTwoVictimsEachOnce(t *testing.T) {
	st := newMemState()
	st.addNode(testNode("1", "dc1", 1000, 4096))
	low := testJob("low", api.JobTypeService, 0, 100, 64)
	low.Priority = 20
	st.upsertJob(low)
	for i, cpu := range []int64{600, 400} {
		st.upsertAlloc(&api.Allocation{
			ID: []string{"big", "small"}[i], Namespace: api.DefaultNamespace, JobID: "low", Job: low, TaskGroup: "web",
			Name: api.AllocName("low", "web", i), NodeID: "node-1", DesiredStatus: api.AllocDesiredStatusRun,
			ClientStatus: api.AllocClientStatusRunning,
			AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
				"server": {Cpu: api.AllocatedCpuResources{CpuShares: cpu}, Memory: api.AllocatedMemoryResources{MemoryMB: 64}}}},
		})
	}
	high := testJob("high", api.JobTypeService, 1, 1000, 64)
	high.Priority = 80
	st.upsertJob(high)
	res, err := Schedule(st, testEval(high, 1), Options{Now: testNow, Preemption: &PreemptionConfig{ServiceSchedulerEnabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	var evicted []string
	for _, a := range res.Plan.NodePreemptions["node-1"] {
		evicted = append(evicted, a.ID)
	}
	sort.Strings(evicted)
	if len(evicted) != 2 || evicted[0] != "big" || evicted[1] != "small" {
		t.Fatalf("preempted %v, want [big small]", evicted)
	}
	if ok, why, err := NodePlanFits(st, res.Plan, "node-1"); err != nil || !ok {
		t.Fatalf("the plan does not fit its node: %s %v", why, err)
	}
}

// runningAlloc is a running alloc of job's group "web" at index i on node.
func runningAlloc(job *api.Job, i int, node string, cpu int64, created time.Time) *api.Allocation {
	return &api.Allocation{
		ID: fmt.Sprintf("%s-%d", job.ID, i), Namespace: api.DefaultNamespace, JobID: job.ID, Job: job, TaskGroup: "web",
		Name: api.AllocName(job.ID, "web", i), NodeID: node, DesiredStatus: api.AllocDesiredStatusRun,
		ClientStatus: api.AllocClientStatusRunning, CreateTime: created.UnixNano(),
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
			"server": {Cpu: api.AllocatedCpuResources{CpuShares: cpu}, Memory: api.AllocatedMemoryResources{MemoryMB: 64}}}},
	}
}

// preempted returns the plan's preempted alloc IDs by node, sorted.
func preempted(p *api.Plan) map[string][]string {
	out := map[string][]string{}
	for n, list := range p.NodePreemptions {
		for _, a := range list {
			out[n] = append(out[n], a.ID)
		}
		sort.Strings(out[n])
	}
	return out
}

// Preemption only takes allocs of jobs at least 10 points lower that do
// not protect themselves: preemptible = false and an alloc younger than
// its job's min_runtime stay; the one old enough goes.
func TestPreemptRespectsProtection(t *testing.T) {
	st := newMemState()
	for _, n := range []string{"1", "2", "3", "4"} {
		st.addNode(testNode(n, "dc1", 1000, 4096))
	}
	no := false
	pinned := testJob("pinned", api.JobTypeService, 1, 900, 64)
	pinned.Priority, pinned.Preemptible = 10, &no
	young := testJob("young", api.JobTypeBatch, 1, 900, 64)
	young.Priority, young.MinRuntime = 10, time.Hour
	near := testJob("near", api.JobTypeService, 1, 900, 64)
	near.Priority = 71 // 80 - 9
	old := testJob("old", api.JobTypeBatch, 1, 900, 64)
	old.Priority, old.MinRuntime = 40, time.Hour
	for i, j := range []*api.Job{pinned, young, near, old} {
		st.upsertJob(j)
		created := testNow.Add(-2 * time.Hour)
		if j == young {
			created = testNow.Add(-time.Minute)
		}
		st.upsertAlloc(runningAlloc(j, 0, fmt.Sprintf("node-%d", i+1), 900, created))
	}
	high := testJob("high", api.JobTypeBatch, 1, 800, 64)
	high.Priority = 80
	st.upsertJob(high)
	res, err := Schedule(st, testEval(high, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if got := preempted(res.Plan); len(got) != 1 || len(got["node-4"]) != 1 || got["node-4"][0] != "old-0" {
		t.Fatalf("preempted %v, want only old-0 on node-4", got)
	}
	if placedCount(res.Plan) != 1 || res.Plan.NodeAllocation["node-4"] == nil {
		t.Fatalf("placements %v, want one on node-4", res.Plan.NodeAllocation)
	}
}

// Among victim sets, the lowest highest priority wins over fewer
// resources, and then fewer resources win.
func TestPreemptCheapestVictims(t *testing.T) {
	st := newMemState()
	for _, n := range []string{"1", "2", "3"} {
		st.addNode(testNode(n, "dc1", 1000, 4096))
	}
	mk := func(id string, prio int, node string, cpu int64) {
		j := testJob(id, api.JobTypeService, 1, int(cpu), 64)
		j.Priority = prio
		st.upsertJob(j)
		st.upsertAlloc(runningAlloc(j, 0, node, cpu, testNow.Add(-time.Hour)))
	}
	mk("small40", 40, "node-1", 900) // cheapest resources but priority 40
	mk("big20", 20, "node-2", 950)   // priority 20: wins
	mk("small20", 20, "node-3", 500) // node-3: 50 free
	mk("rest20", 20, "node-3", 450)  // evicting it frees 500: the cheapest

	high := testJob("high", api.JobTypeService, 1, 500, 64)
	high.Priority = 80
	st.upsertJob(high)
	res, err := Schedule(st, testEval(high, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	// rest20 (450) frees enough on node-3: cheaper than small20 (500) or big20 (950).
	if got := preempted(res.Plan); len(got) != 1 || len(got["node-3"]) != 1 || got["node-3"][0] != "rest20-0" {
		t.Fatalf("preempted %v, want rest20-0 on node-3", got)
	}
}

// gangJob is a priority prio job whose group "web" of count members is a
// gang with min.
// cpuGangJob is a batch gang of count CPU-only members at prio.
func cpuGangJob(id string, prio, count, min int, cpu int) *api.Job {
	j := testJob(id, api.JobTypeBatch, count, cpu, 64)
	j.Priority = prio
	j.TaskGroups[0].Gang = &api.Gang{Min: min}
	return j
}

// Evicting a gang member evicts the whole gang, every member on every
// node, each recorded on its own node; an elastic gang above its min
// loses only its surplus.
func TestPreemptWholeGang(t *testing.T) {
	for _, c := range []struct {
		name       string
		count, min int
		want       map[string][]string
	}{
		{"rigid", 3, 0, map[string][]string{"node-1": {"g-0"}, "node-2": {"g-1"}, "node-3": {"g-2"}}},
		{"elastic", 3, 2, map[string][]string{"node-1": {"g-0"}}},
		{"at-min", 3, 3, map[string][]string{"node-1": {"g-0"}, "node-2": {"g-1"}, "node-3": {"g-2"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newMemState()
			for _, n := range []string{"1", "2", "3"} {
				st.addNode(testNode(n, "dc1", 1000, 4096))
			}
			g := cpuGangJob("g", 20, c.count, c.min, 900)
			st.upsertJob(g)
			for i := 0; i < c.count; i++ {
				a := runningAlloc(g, i, fmt.Sprintf("node-%d", i+1), 900, testNow.Add(-time.Hour))
				a.Gang = &api.AllocGang{ID: "web", Size: c.count, Rank: i}
				st.upsertAlloc(a)
			}
			high := testJob("high", api.JobTypeService, 1, 500, 64)
			high.Priority = 80
			high.Datacenters = []string{"dc1"}
			high.Constraints = []*api.Constraint{{LTarget: "${node.unique.id}", RTarget: "node-1", Operand: "="}}
			st.upsertJob(high)
			res, err := Schedule(st, testEval(high, 1), Options{Now: testNow})
			if err != nil {
				t.Fatal(err)
			}
			if got := preempted(res.Plan); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("preempted %v, want %v", got, c.want)
			}
			for n := range c.want {
				if ok, why, err := NodePlanFits(st, res.Plan, n); err != nil || !ok {
					t.Fatalf("node %s: %s %v", n, why, err)
				}
			}
		})
	}
}

// An all-at-once job that cannot be placed whole takes back the
// preemptions its dropped placements made.
func TestPreemptDroppedWithAllAtOnce(t *testing.T) {
	st := newMemState()
	st.addNode(testNode("1", "dc1", 1000, 4096))
	st.addNode(testNode("2", "dc1", 1000, 4096))
	low := testJob("low", api.JobTypeService, 1, 900, 64)
	low.Priority = 20
	st.upsertJob(low)
	st.upsertAlloc(runningAlloc(low, 0, "node-1", 900, testNow.Add(-time.Hour)))
	keep := testJob("keep", api.JobTypeService, 1, 900, 64)
	keep.Priority = 80
	st.upsertJob(keep)
	st.upsertAlloc(runningAlloc(keep, 0, "node-2", 900, testNow.Add(-time.Hour)))
	high := testJob("high", api.JobTypeService, 2, 800, 64)
	high.Priority, high.AllAtOnce = 80, true
	st.upsertJob(high)
	res, err := Schedule(st, testEval(high, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if placedCount(res.Plan) != 0 || len(res.Plan.NodePreemptions) != 0 {
		t.Fatalf("placed %d, preempted %v: want nothing (the job does not fit whole)", placedCount(res.Plan), preempted(res.Plan))
	}
	if ann := res.Plan.Annotations; ann != nil && (len(ann.PreemptedAllocs) != 0 || ann.DesiredTGUpdates["web"].Preemptions != 0) {
		t.Fatalf("annotations still count preemptions: %+v", ann.DesiredTGUpdates["web"])
	}
}

// A preempted batch alloc is work still to do: its job's next pass places
// a replacement (blocked while there is no room, placed once there is),
// not a completed slot.
func TestPreemptedBatchRequeued(t *testing.T) {
	st := newMemState()
	st.addNode(testNode("1", "dc1", 1000, 4096))
	low := testJob("low", api.JobTypeBatch, 1, 900, 64)
	low.Priority = 20
	st.upsertJob(low)
	st.upsertAlloc(runningAlloc(low, 0, "node-1", 900, testNow.Add(-time.Hour)))
	high := testJob("high", api.JobTypeBatch, 1, 900, 64)
	high.Priority = 90
	st.upsertJob(high)
	res, err := Schedule(st, testEval(high, 1), Options{Now: testNow})
	if err != nil || len(res.Plan.NodePreemptions["node-1"]) != 1 {
		t.Fatalf("high: %v, preempted %v", err, preempted(res.Plan))
	}
	st.apply(res.Plan)
	ev := testEval(low, 2)
	ev.TriggeredBy = api.EvalTriggerPreemption
	res, err = Schedule(st, ev, Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if res.Blocked == nil || res.Eval.QueuedAllocations["web"] != 1 || placedCount(res.Plan) != 0 || len(res.Plan.NodePreemptions) != 0 {
		t.Fatalf("low after its eviction: blocked %v queued %v placed %d preempted %v; want blocked with 1 queued",
			res.Blocked != nil, res.Eval.QueuedAllocations, placedCount(res.Plan), preempted(res.Plan))
	}
	st.addNode(testNode("2", "dc1", 1000, 4096))
	res, err = Schedule(st, testEval(low, 3), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if l := res.Plan.NodeAllocation["node-2"]; len(l) != 1 || l[0].Name != "low.web[0]" || res.Blocked != nil {
		t.Fatalf("low once node-2 joined: %v (blocked %v), want low.web[0] on node-2", res.Plan.NodeAllocation, res.Blocked != nil)
	}
}

// Devices weigh most in a victim set's cost: a CPU-only placement evicts
// a big CPU alloc rather than a small one holding a GPU; between equal
// victims the younger goes (less work lost).
func TestPreemptDeviceWeightAndAge(t *testing.T) {
	st := newMemState()
	st.addNode(dgxLike("g")) // 64,000 MHz, 8 GPUs
	low := func(id string, cpu int64, gpus int, created time.Time) {
		j := testJob(id, api.JobTypeBatch, 1, int(cpu), 64)
		j.Priority = 20
		st.upsertJob(j)
		a := runningAlloc(j, 0, "node-g", cpu, created)
		if gpus > 0 {
			a.AllocatedResources.Tasks["server"].Devices = []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu",
				Name: "A100-SXM4-80GB", DeviceIDs: []string{"g-GPU-0"}}}
		}
		st.upsertAlloc(a)
	}
	low("gpu", 1500, 1, testNow.Add(-time.Minute))
	low("cpu", 62000, 0, testNow.Add(-time.Hour))
	high := testJob("high", api.JobTypeBatch, 1, 1200, 64)
	high.Priority, high.Datacenters = 80, []string{"dc1"}
	st.upsertJob(high)
	res, err := Schedule(st, testEval(high, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if got := preempted(res.Plan); len(got["node-g"]) != 1 || got["node-g"][0] != "cpu-0" {
		t.Fatalf("preempted %v, want cpu-0 (62,000 MHz weigh less than one GPU)", got)
	}

	st = newMemState()
	st.addNode(testNode("1", "dc1", 1000, 4096))
	st.addNode(testNode("2", "dc1", 1000, 4096))
	for i, age := range []time.Duration{3 * time.Hour, time.Hour} {
		j := testJob(fmt.Sprintf("w%d", i), api.JobTypeBatch, 1, 900, 64)
		j.Priority = 20
		st.upsertJob(j)
		st.upsertAlloc(runningAlloc(j, 0, fmt.Sprintf("node-%d", i+1), 900, testNow.Add(-age)))
	}
	high = testJob("high", api.JobTypeBatch, 1, 900, 64)
	high.Priority = 80
	st.upsertJob(high)
	res, err = Schedule(st, testEval(high, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if got := preempted(res.Plan); len(got) != 1 || len(got["node-2"]) != 1 || got["node-2"][0] != "w1-0" {
		t.Fatalf("preempted %v, want w1-0 (the younger)", got)
	}
}
