package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

func quotaCluster(nodes, gpus int) *memState {
	st := newMemState()
	for i := range nodes {
		st.addNode(gangGPUNode(fmt.Sprint(i), gpus))
	}
	st.upsertQueue(&api.Queue{Name: "team-a", Limit: &api.QueueResources{GPUs: 8}})
	st.upsertQueue(&api.Queue{Name: "team-a/train", Parent: "team-a"})
	return st
}

func queueGPUJob(id, queue string, count, gpus int) *api.Job {
	j := testJob(id, api.JobTypeBatch, count, 1000, 1024)
	j.Queue = queue
	j.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(gpus)}}
	return j
}

// A parent's limit caps its child's job: what fits under it is placed,
// the rest fails with the limit explained, blocks (escaping the class
// filter, no reservation) and is placed once the queue's usage drops.
func TestQuotaLimitAncestor(t *testing.T) {
	st := quotaCluster(3, 8)
	j := queueGPUJob("train", "team-a/train", 3, 4)
	st.upsertJob(j)
	res, err := Schedule(st, testEval(j, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if n := placedCount(res.Plan); n != 2 {
		t.Fatalf("placed %d, want 2 (8 GPUs of team-a's limit)", n)
	}
	m := res.Eval.FailedTGAllocs["web"]
	if m == nil || !slices.Contains(m.QuotaExhausted, "queue team-a: gpu 8 of 8 used, 4 more asked") {
		t.Fatalf("failure %+v, want the team-a limit explained", m)
	}
	if got, want := ExplainFailure("web", m), "web: 1 alloc unplaced; queue team-a: gpu 8 of 8 used, 4 more asked"; got != want {
		t.Errorf("explained %q, want %q", got, want)
	}
	b := res.Blocked
	if b == nil || !b.EscapedComputedClass || b.Reservation != nil {
		t.Fatalf("blocked eval %+v, want one escaping the class filter without a reservation", b)
	}
	st.apply(res.Plan)
	// Another queue is not limited by team-a.
	other := queueGPUJob("other", "", 1, 8)
	st.upsertJob(other)
	if res, _ := Schedule(st, testEval(other, 2), Options{Now: testNow}); placedCount(res.Plan) != 1 {
		t.Fatalf("a default-queue job was not placed: %+v", res.Eval.FailedTGAllocs)
	}
	// One of train's allocs finishes: the blocked eval now places the third.
	done := st.liveAllocs(api.DefaultNamespace, "train")[0].Copy()
	done.ClientStatus = api.AllocClientStatusComplete
	st.upsertAlloc(done)
	res, err = Schedule(st, b, Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if n := placedCount(res.Plan); n != 1 || res.Blocked != nil {
		t.Fatalf("after usage dropped: placed %d, blocked %v; failures %+v", n, res.Blocked != nil, res.Eval.FailedTGAllocs)
	}
}

// An ask over the limit by itself says it can never run under the limit
// (not "at its limit: 0 of 4 used"), and stays blocked with that reason:
// raising the limit lets it run.
func TestQuotaAskOverLimitNeverFits(t *testing.T) {
	st := quotaCluster(2, 8)
	st.upsertQueue(&api.Queue{Name: "small", Limit: &api.QueueResources{GPUs: 4}})
	j := queueGPUJob("big", "small", 1, 8)
	st.upsertJob(j)
	res, err := Schedule(st, testEval(j, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if n := placedCount(res.Plan); n != 0 {
		t.Fatalf("placed %d over the limit", n)
	}
	m := res.Eval.FailedTGAllocs["web"]
	if m == nil || !slices.Equal(m.QuotaExhausted, []string{"queue small: gpu limit 4, 8 asked by one allocation: it can never run under this limit"}) {
		t.Fatalf("failure %+v, want the ask over the limit itself", m)
	}
	want := "queue small can never run it: gpu limit 4, 8 asked by one allocation (raise the limit or ask less)"
	if len(m.Reasons) == 0 || m.Reasons[0].Message != want {
		t.Errorf("reasons %+v, want first %q", m.Reasons, want)
	}
	if res.Blocked == nil {
		t.Fatal("no blocked eval: the job must stay visibly pending")
	}
	st.upsertQueue(&api.Queue{Name: "small", Limit: &api.QueueResources{GPUs: 8}})
	if res, _ := Schedule(st, res.Blocked, Options{Now: testNow}); placedCount(res.Plan) != 1 {
		t.Fatalf("after raising the limit: not placed, failures %+v", res.Eval.FailedTGAllocs)
	}
}

// A per-model limit steers placements to other models, then fails.
func TestQuotaLimitPerModel(t *testing.T) {
	st := newMemState()
	h := gangGPUNode("h", 8)
	a := gangGPUNode("a", 4)
	a.NodeResources.Devices[0].Name = "A100"
	st.addNode(h)
	st.addNode(a)
	st.upsertQueue(&api.Queue{Name: "q", Limit: &api.QueueResources{GPUsByModel: map[string]float64{"nvidia/gpu/H100": 4}}})
	j := queueGPUJob("j", "q", 3, 4)
	st.upsertJob(j)
	res, err := Schedule(st, testEval(j, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]int{}
	for _, al := range placedOf(res.Plan, "j") {
		nodes[al.NodeID]++
	}
	if nodes[h.ID] != 1 || nodes[a.ID] != 1 {
		t.Fatalf("placements by node %v, want one on the H100 node (its limit) and one on the A100 node", nodes)
	}
	m := res.Eval.FailedTGAllocs["web"]
	if m == nil || !slices.Contains(m.QuotaExhausted, "queue q: gpu nvidia/gpu/H100 4 of 4 used, 4 more asked") {
		t.Fatalf("failure %+v, want the H100 limit explained", m)
	}
}

// A gang over a limit places nothing (all or none), explained; CPU and
// memory limits bind like GPUs.
func TestQuotaLimitGangAndCPU(t *testing.T) {
	st := quotaCluster(3, 8)
	g := gangJob("g", 3, 4, 0)
	g.Queue = "team-a/train"
	st.upsertJob(g)
	res, err := Schedule(st, testEval(g, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if n := placedCount(res.Plan); n != 0 {
		t.Fatalf("gang placed %d members over the limit", n)
	}
	m := res.Eval.FailedTGAllocs["train"]
	if m == nil || !strings.Contains(strings.Join(m.QuotaExhausted, ";"), "queue team-a: gpu") {
		t.Fatalf("gang failure %+v, want the limit explained", m)
	}
	st.upsertQueue(&api.Queue{Name: "cpu", Limit: &api.QueueResources{CPU: 2500, MemoryMB: 100000}})
	c := testJob("c", api.JobTypeService, 4, 1000, 256)
	c.Queue = "cpu"
	st.upsertJob(c)
	res, err = Schedule(st, testEval(c, 2), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if n := placedCount(res.Plan); n != 2 {
		t.Fatalf("placed %d, want 2 under a 2500 MHz limit", n)
	}
	if m := res.Eval.FailedTGAllocs["web"]; m == nil || !slices.Contains(m.QuotaExhausted, "queue cpu: cpu 2000 of 2500 MHz used, 1000 more asked") || m.CoalescedFailures != 1 {
		t.Fatalf("cpu failure %+v", m)
	}
}

// Property: over random queue trees with random limits and random jobs
// (GPU, CPU, gangs, stops of finished work), every plan the scheduler
// makes, applied, leaves each queue's subtree within its limit.
func TestQuotaPropertyNeverAboveLimit(t *testing.T) {
	refused, placed := 0, 0
	for seed := range 40 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		st := newMemState()
		for i := range 2 + r.IntN(6) {
			st.addNode(gangGPUNode(fmt.Sprint(i), []int{0, 4, 8}[r.IntN(3)]))
		}
		lim := func() *api.QueueResources {
			if r.IntN(3) == 0 {
				return nil
			}
			l := &api.QueueResources{GPUs: float64(r.IntN(12)), CPU: int64(r.IntN(4) * 4000)}
			if r.IntN(3) == 0 {
				l.GPUsByModel = map[string]float64{"nvidia/gpu/H100": float64(r.IntN(8))}
			}
			return l
		}
		names := []string{"a", "a/x", "a/y", "b", "b/z", api.DefaultQueue}
		for _, n := range names {
			st.upsertQueue(&api.Queue{Name: n, Parent: api.ParentOf(n), Limit: lim()})
		}
		for step := range 25 {
			var j *api.Job
			if r.IntN(3) == 0 {
				j = gangJob(fmt.Sprint("j", step), 1+r.IntN(4), 1+r.IntN(4), 0)
			} else {
				j = testJob(fmt.Sprint("j", step), api.JobTypeBatch, 1+r.IntN(5), 500+r.IntN(3)*1000, 512)
				if r.IntN(2) == 0 {
					j.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(1 + r.IntN(4))}}
				}
			}
			j.Queue = names[r.IntN(len(names))]
			j.Priority = 20 + r.IntN(60)
			st.upsertJob(j)
			res, err := Schedule(st, testEval(j, step), Options{Now: testNow})
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			for _, m := range res.Eval.FailedTGAllocs {
				if len(m.QuotaExhausted) > 0 {
					refused++
				}
			}
			placed += placedCount(res.Plan)
			st.apply(res.Plan)
			checkQueueLimits(t, st, fmt.Sprintf("seed %d step %d", seed, step))
			if live := st.liveAllocs(api.DefaultNamespace, fmt.Sprint("j", r.IntN(step+1))); len(live) > 0 && r.IntN(2) == 0 {
				c := live[0].Copy()
				c.ClientStatus = api.AllocClientStatusComplete
				st.upsertAlloc(c)
			}
		}
	}
	if refused < 50 || placed < 500 {
		t.Fatalf("%d groups refused on a limit, %d allocs placed: the workload does not exercise the limits", refused, placed)
	}
	t.Logf("%d groups refused on a limit, %d allocs placed", refused, placed)
}

func checkQueueLimits(t *testing.T, st *memState, at string) {
	t.Helper()
	usage, _ := st.QueueUsage()
	queues, _ := st.Queues()
	for _, q := range queues {
		var sub api.QueueResources
		for name, u := range usage {
			if inQueueTree(name, q.Name) {
				sub.Add(*u, 1)
			}
		}
		if over := sub.Exceeds(q.Limit); len(over) > 0 {
			t.Fatalf("%s: queue %s over its limit: %v", at, q.Name, over)
		}
	}
}

// BenchmarkQuotaBatch10000 is BenchmarkBatch10000 with the job in a
// child queue whose parent has a limit it stays under (every node check
// also checks the limit); compare the two for the limit's cost.
func BenchmarkQuotaBatch10000(b *testing.B) {
	st := benchCluster(b)
	st.upsertQueue(&api.Queue{Name: "t", Limit: &api.QueueResources{CPU: 10000 * 500, MemoryMB: 10000 * 256}})
	st.upsertQueue(&api.Queue{Name: "t/x", Parent: "t"})
	job := testJob("bench", api.JobTypeBatch, 10000, 500, 256)
	job.Queue = "t/x"
	st.upsertJob(job)
	placed := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Schedule(st, testEval(job, i), Options{Now: testNow})
		if err != nil {
			b.Fatal(err)
		}
		placed = placedCount(res.Plan)
	}
	b.StopTimer()
	if placed != 10000 {
		b.Fatalf("placed %d of 10000", placed)
	}
	b.ReportMetric(float64(10000)*float64(b.N)/b.Elapsed().Seconds(), "placements/s")
}
