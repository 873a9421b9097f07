package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
)

// shareJob is a batch job of one alloc asking count GPUs' share sh.
func shareJob(id string, count uint64, sh *api.DeviceShare) *api.Job {
	j := gpuJob(id, count)
	j.TaskGroups[0].Tasks[0].Resources.Devices[0].Share = sh
	return j
}

// placeOne schedules job alone and commits its plan; it returns the
// placed alloc's device grant (nil when nothing was placed).
func placeOne(t *testing.T, st *memState, job *api.Job, n int) *api.AllocatedDeviceResource {
	t.Helper()
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, n), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	st.apply(res.Plan)
	for _, l := range res.Plan.NodeAllocation {
		for _, a := range l {
			for _, tr := range a.AllocatedResources.Tasks {
				if len(tr.Devices) > 0 {
					return tr.Devices[0]
				}
			}
		}
	}
	return nil
}

// Shares of one GPU: four quarters fill one GPU before another is
// touched (untouched GPUs stay whole for whole asks), a GPU shared in
// one mode takes no share of the other, a memory share becomes its
// fraction of the GPU's memory, and a share's grant says what it holds.
func TestSharesPackOntoSharedGPUs(t *testing.T) {
	st := newMemState()
	st.addNode(gpuNode("n1", 81920, "9.0", func(i, j int) int { return 0 }, func(i int) int { return 0 }))
	seen := map[string]int{}
	for i := range 4 {
		d := placeOne(t, st, shareJob(fmt.Sprintf("q%d", i), 1, &api.DeviceShare{Fraction: 0.25, Mode: api.ShareModeMPS, Limit: 0.5}), i)
		if d == nil || d.Share == nil || len(d.DeviceIDs) != 1 {
			t.Fatalf("quarter %d: grant %+v", i, d)
		}
		if d.Share.Milli != 250 || d.Share.Mode != api.ShareModeMPS || d.Share.LimitMilli != 500 || d.Share.MemoryMB != 20480 {
			t.Errorf("quarter %d holds %+v, want 250 milli, mps, limit 500, 20480 MiB", i, d.Share)
		}
		seen[d.DeviceIDs[0]]++
	}
	if len(seen) != 1 {
		t.Fatalf("four quarters went to %d GPUs (%v), want one filled", len(seen), seen)
	}
	ts := placeOne(t, st, shareJob("ts", 1, &api.DeviceShare{Fraction: 0.5}), 10)
	if ts == nil || seen[ts.DeviceIDs[0]] > 0 || ts.Share.Mode != api.ShareModeTimeSlicing {
		t.Fatalf("a time-slicing half: %+v, want another GPU than the mps one", ts)
	}
	mem := placeOne(t, st, shareJob("mem", 1, &api.DeviceShare{MemoryMB: 10240}), 11)
	if mem == nil || mem.DeviceIDs[0] != ts.DeviceIDs[0] || mem.Share.Milli != 125 || mem.Share.MemoryMB != 10240 {
		t.Fatalf("10 GiB of an 80 GiB GPU: %+v, want 125 milli on the time-slicing GPU (the tightest fit)", mem)
	}
	whole := placeOne(t, st, gpuJob("whole6", 6), 12)
	if whole == nil || whole.Share != nil || len(whole.DeviceIDs) != 6 {
		t.Fatalf("6 whole GPUs next to 2 shared ones: %+v", whole)
	}
	if d := placeOne(t, st, gpuJob("whole1", 1), 13); d != nil {
		t.Fatalf("a whole GPU on a node whose GPUs are all taken or shared: %+v", d)
	}
	if d := placeOne(t, st, shareJob("big", 1, &api.DeviceShare{Fraction: 0.5, Mode: api.ShareModeMPS}), 14); d != nil {
		t.Fatalf("half of the full mps GPU: %+v", d)
	}
	if d := placeOne(t, st, shareJob("small", 2, &api.DeviceShare{Fraction: 0.1}), 15); d != nil {
		t.Fatalf("a share of 2 GPUs with one time-slicing GPU left: %+v", d)
	}
}

// The scheduler's picks never overcommit a GPU, whatever the sequence of
// shares, whole asks, modes and departures: after each step the node's
// ledger (rebuilt from the committed allocs) fits every alloc.
func TestSharesNeverOvercommit(t *testing.T) {
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 1))
		st := newMemState()
		for i := range 3 {
			st.addNode(gpuNode(fmt.Sprintf("n%d", i), 40960, "9.0", func(i, j int) int { return 0 }, func(i int) int { return 0 }))
		}
		var live []*api.Allocation
		for step := range 120 {
			if len(live) > 0 && r.IntN(4) == 0 {
				k := r.IntN(len(live))
				c := live[k].Copy()
				c.ClientStatus = api.AllocClientStatusComplete
				st.upsertAlloc(c)
				live = append(live[:k], live[k+1:]...)
				continue
			}
			var job *api.Job
			switch r.IntN(4) {
			case 0:
				job = gpuJob(fmt.Sprintf("w%d", step), uint64(1+r.IntN(3)))
			default:
				sh := &api.DeviceShare{Mode: []string{api.ShareModeMPS, api.ShareModeTimeSlicing}[r.IntN(2)]}
				if r.IntN(2) == 0 {
					sh.Fraction = float64(1+r.IntN(9)) / 10
				} else {
					sh.MemoryMB = int64(1024 * (1 + r.IntN(30)))
				}
				job = shareJob(fmt.Sprintf("s%d", step), uint64(1+r.IntN(2)), sh)
			}
			st.upsertJob(job)
			res, err := Schedule(st, testEval(job, step), Options{Now: testNow})
			if err != nil {
				t.Fatal(err)
			}
			st.apply(res.Plan)
			for _, l := range res.Plan.NodeAllocation {
				live = append(live, l...)
			}
			for _, n := range st.nodes {
				c := capacity.NewNode(n)
				for _, a := range st.byNode[n.ID] {
					if a.TerminalStatus() {
						continue
					}
					v := capacity.AllocVector(a.AllocatedResources)
					if e := c.Fits(&v); e != nil {
						t.Fatalf("seed %d step %d: node %s overcommitted by alloc %s: %v", seed, step, n.ID, a.ID, e)
					}
					c.Add(&v)
				}
			}
		}
	}
}

// A queue counts a share as its fraction: a limit of 1 GPU holds four
// quarters and refuses a fifth.
func TestQueueCountsShares(t *testing.T) {
	st := newMemState()
	st.addNode(gpuNode("n1", 81920, "9.0", func(i, j int) int { return 0 }, func(i int) int { return 0 }))
	st.queues["team"] = &api.Queue{Name: "team", Limit: &api.QueueResources{GPUs: 1}}
	for i := range 5 {
		j := shareJob(fmt.Sprintf("q%d", i), 1, &api.DeviceShare{Fraction: 0.25})
		j.Queue = "team"
		d := placeOne(t, st, j, i)
		if (d != nil) != (i < 4) {
			t.Fatalf("quarter %d under a 1-GPU limit: placed %v", i, d != nil)
		}
	}
	var held float64
	for _, a := range st.allocs {
		held += a.QueueUsage().GPUs
	}
	if held != 1 {
		t.Errorf("the queue holds %v GPUs, want 1", held)
	}
}

// Preemption frees a fraction: with every GPU of the node taken (seven
// whole by one low-priority job, the eighth in two halves by two
// others), a high-priority half share evicts one half, never the seven
// whole GPUs, and takes its place on that GPU.
func TestPreemptionFreesAShare(t *testing.T) {
	st := newMemState()
	st.addNode(gpuNode("n1", 81920, "9.0", func(i, j int) int { return 0 }, func(i int) int { return 0 }))
	low := func(j *api.Job) *api.Job { j.Priority = 20; return j }
	if d := placeOne(t, st, low(gpuJob("whole7", 7)), 0); d == nil || len(d.DeviceIDs) != 7 {
		t.Fatalf("seven whole GPUs: %+v", d)
	}
	halves := map[string]string{} // alloc's job -> its GPU
	for i, id := range []string{"half-a", "half-b"} {
		d := placeOne(t, st, low(shareJob(id, 1, &api.DeviceShare{Fraction: 0.5})), 1+i)
		if d == nil || d.Share == nil || d.Share.Milli != 500 {
			t.Fatalf("%s: %+v", id, d)
		}
		halves[id] = d.DeviceIDs[0]
	}
	if halves["half-a"] != halves["half-b"] {
		t.Fatalf("the two halves went to %v, want one GPU", halves)
	}
	if d := placeOne(t, st, low(shareJob("late", 1, &api.DeviceShare{Fraction: 0.5})), 3); d != nil {
		t.Fatalf("a low-priority half on a full node: %+v", d)
	}
	high := shareJob("high", 1, &api.DeviceShare{Fraction: 0.5})
	high.Priority = 80
	st.upsertJob(high)
	res, err := Schedule(st, testEval(high, 4), Options{Now: testNow, Preemption: &PreemptionConfig{BatchSchedulerEnabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	victims := res.Plan.NodePreemptions["node-n1"]
	if len(victims) != 1 || halves[victims[0].JobID] == "" {
		var ids []string
		for _, a := range victims {
			ids = append(ids, a.JobID)
		}
		t.Fatalf("preempted %v, want exactly one of the halves", ids)
	}
	var got *api.AllocatedDeviceResource
	for _, a := range res.Plan.NodeAllocation["node-n1"] {
		if a.JobID == "high" {
			got = a.AllocatedResources.Tasks["server"].Devices[0]
		}
	}
	if got == nil || got.Share == nil || got.Share.Milli != 500 || got.DeviceIDs[0] != halves[victims[0].JobID] {
		t.Fatalf("the high-priority half got %+v, want 500 milli of %s", got, halves[victims[0].JobID])
	}
	if ok, why, err := NodePlanFits(st, res.Plan, "node-n1"); err != nil || !ok {
		t.Fatalf("the plan does not fit its node: %s %v", why, err)
	}
}

// A gang of shares is placed whole or not at all: with one GPU free, a
// gang of three halves places nothing, and a gang of two places both
// halves on that GPU.
func TestGangOfShares(t *testing.T) {
	st := newMemState()
	st.addNode(gpuNode("n1", 81920, "9.0", func(i, j int) int { return 0 }, func(i int) int { return 0 }))
	if d := placeOne(t, st, gpuJob("whole7", 7), 0); d == nil || len(d.DeviceIDs) != 7 {
		t.Fatalf("seven whole GPUs: %+v", d)
	}
	halves := func(id string, n int) *api.Job {
		j := gangJob(id, n, 1, n)
		j.TaskGroups[0].Tasks[0].Resources.Devices[0].Share = &api.DeviceShare{Fraction: 0.5}
		return j
	}
	three := halves("three", 3)
	st.upsertJob(three)
	res, err := Schedule(st, testEval(three, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if n := placedCount(res.Plan); n != 0 {
		t.Fatalf("a gang of three halves with one GPU free placed %d members, want none", n)
	}
	two := halves("two", 2)
	st.upsertJob(two)
	if res, err = Schedule(st, testEval(two, 2), Options{Now: testNow}); err != nil {
		t.Fatal(err)
	}
	gpus := map[string]int{}
	for _, l := range res.Plan.NodeAllocation {
		for _, a := range l {
			d := a.AllocatedResources.Tasks["server"].Devices[0]
			if d.Share == nil || d.Share.Milli != 500 {
				t.Fatalf("member %s holds %+v, want half a GPU", a.Name, d)
			}
			gpus[d.DeviceIDs[0]]++
		}
	}
	if len(gpus) != 1 || placedCount(res.Plan) != 2 {
		t.Fatalf("a gang of two halves placed %d members on %v, want both on the free GPU", placedCount(res.Plan), gpus)
	}
}
