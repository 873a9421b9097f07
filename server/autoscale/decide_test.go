package autoscale

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/scheduler"
)

func demand(t *testing.T, w *world, pol Policy, booting, room int) DemandResult {
	t.Helper()
	st, pending, err := w.State()
	if err != nil {
		t.Fatal(err)
	}
	d, err := Demand(DemandInput{State: st, Pending: pending, Policy: pol, Booting: booting, Room: room,
		Options: scheduler.Options{Now: w.clk.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A gang of 4 x 8 GPUs is bought whole (4 nodes) or not at all.
func TestDemandGangWholeOrNothing(t *testing.T) {
	w := newWorld(t, time.Minute)
	w.submit(gpuJob("train", 4, 8, true, ""))
	pol := gpuPolicy(0, 10, StrategyEmpty)
	if got := demand(t, w, pol, 0, 4).New; got != 4 {
		t.Errorf("room 4: New = %d, want 4", got)
	}
	if got := demand(t, w, pol, 0, 3).New; got != 0 {
		t.Errorf("room 3: New = %d, want 0 (never part of a gang)", got)
	}
	// Two nodes booting: two more make the gang.
	if got := demand(t, w, pol, 2, 8).New; got != 2 {
		t.Errorf("2 booting: New = %d, want 2", got)
	}
}

// Work over its queue's limit buys nothing: 8 jobs of 8 GPUs in a queue
// limited to 16 GPUs need 2 nodes, not 8.
func TestDemandQueueLimit(t *testing.T) {
	w := newWorld(t, time.Minute)
	if err := w.st.UpsertQueues(w.next(), []*api.Queue{{Name: "a", Limit: &api.QueueResources{GPUs: 16}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		w.submit(gpuJob(fmt.Sprintf("j%d", i), 1, 8, false, "a"))
	}
	pol := gpuPolicy(0, 20, StrategyEmpty)
	if got := demand(t, w, pol, 0, 20).New; got != 2 {
		t.Errorf("queue limited to 16 GPUs: New = %d, want 2", got)
	}
	// The same work in an unlimited queue needs all 8.
	w2 := newWorld(t, time.Minute)
	for i := range 8 {
		w2.submit(gpuJob(fmt.Sprintf("j%d", i), 1, 8, false, ""))
	}
	if got := demand(t, w2, pol, 0, 20).New; got != 8 {
		t.Errorf("unlimited queue: New = %d, want 8", got)
	}
	// Small asks pack: 16 allocs of 1 GPU fit 2 nodes.
	w3 := newWorld(t, time.Minute)
	w3.submit(gpuJob("small", 16, 1, false, ""))
	if got := demand(t, w3, pol, 0, 20).New; got != 2 {
		t.Errorf("16 x 1 GPU: New = %d, want 2", got)
	}
}

// The scaler: pending work grows the pool after the boot delay, an empty
// node goes after idle and never below min, a spot interruption drains
// the node with the reason and the work moves.
func TestScalerLifecycle(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, time.Minute)
	pol := gpuPolicy(1, 4, StrategyEmpty)
	s := w.scaler(pol)
	step := func() *Report {
		t.Helper()
		w.boot()
		w.settle()
		rep, err := s.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := step(); len(rep.Created["gpu"]) != 1 {
		t.Fatalf("empty pool with min 1: created %v, want 1", rep.Created)
	}
	w.clk.Advance(time.Minute)
	w.submit(gpuJob("a", 2, 8, false, ""))
	if rep := step(); len(rep.Created["gpu"]) != 1 {
		t.Fatalf("2 x 8 GPUs, 1 node ready: created %v, want 1 more", rep.Created)
	}
	if rep := step(); len(rep.Created["gpu"]) != 0 {
		t.Fatalf("node booting: created %v, want none more", rep.Created)
	}
	w.clk.Advance(time.Minute)
	step()
	if got := len(w.liveAllocs("a")); got != 2 {
		t.Fatalf("job a: %d allocs running, want 2", got)
	}
	// Spot interruption of a's first node: drained with the reason, the
	// alloc is re-placed on a new node.
	victim := w.liveAllocs("a")[0]
	n, _ := w.st.NodeByID(nil, victim.NodeID)
	w.sim.Interrupt(n.Name, 2*time.Minute)
	rep := step()
	if len(rep.Interrupted) != 1 || w.drains[victim.NodeID] != ReasonSpot {
		t.Fatalf("interruption: report %+v, drains %v", rep, w.drains)
	}
	w.settle()
	stopped, _ := w.st.AllocByID(nil, victim.ID)
	if want := "alloc is being migrated: " + ReasonSpot; stopped.DesiredDescription != want {
		t.Errorf("interrupted alloc's description %q, want %q", stopped.DesiredDescription, want)
	}
	w.clk.Advance(time.Minute)
	step()
	w.clk.Advance(time.Minute)
	step()
	if got := len(w.liveAllocs("a")); got != 2 {
		t.Fatalf("after interruption: %d allocs of a running, want 2", got)
	}
	// The job ends: nodes go after idle, down to min.
	w.finish("a")
	for range 20 {
		w.clk.Advance(time.Minute)
		step()
		if list, _ := w.sim.List(ctx); len(list)-len(s.removing) < pol.Min {
			t.Fatalf("scale-in left %d of %d instances staying, min %d", len(list)-len(s.removing), len(list), pol.Min)
		}
	}
	list, _ := w.sim.List(ctx)
	if len(list) != 1 {
		t.Errorf("after idle: %d instances, want min 1", len(list))
	}
}

// least_busy never drains a node holding a gang member unless the whole
// gang can move: a gang filling 2 of 2 nodes stays; with room for it
// elsewhere the node goes.
func TestScaleInLeastBusyGang(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, 0)
	pol := gpuPolicy(0, 3, StrategyLeastBusy)
	s := w.scaler(pol)
	s.LowWatermark = 1.01 // every node is "idle" enough
	w.submit(gpuJob("train", 2, 2, true, ""))
	for range 2 {
		w.boot()
		w.settle()
		if _, err := s.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w.boot()
	w.settle()
	if got := len(w.liveAllocs("train")); got != 2 {
		t.Fatalf("gang: %d running, want 2", got)
	}
	// Occupy all but the gang's GPUs so nothing can move: a filler of 6
	// GPUs next to each member.
	w.submit(gpuJob("fill", 1, 6, false, ""))
	w.settle()
	for range 15 {
		w.clk.Advance(time.Minute)
		w.boot()
		w.settle()
		rep, err := s.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range rep.Drained {
			allocs, _ := w.st.AllocsByNode(nil, id)
			for _, a := range allocs {
				if a.JobID == "train" {
					if got := len(w.liveAllocs("train")); got != 2 {
						t.Fatalf("drained node %s holding a gang member; gang has %d running after, want 2", id, got)
					}
				}
			}
		}
	}
}

// The property test: random sequences of pending work (gangs, queue
// limits), job ends, clock steps (boot, idle) and spot interruptions,
// with the fake clock. After every pass: never more instances than max;
// a scale-in never leaves fewer than min staying; a gang running whole
// before a pass without interruptions is running whole after it; every
// alloc a scale-in drain stopped is replaced (no work lost); nothing is
// bought for a queue at its limit.
func TestScalerProperties(t *testing.T) {
	seeds := 25
	if testing.Short() {
		seeds = 6
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { scalerProperties(t, uint64(seed)) })
	}
}

func scalerProperties(t *testing.T, seed uint64) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 45))
	w := newWorld(t, time.Duration(r.IntN(3))*time.Minute)
	const limitA = 24
	if err := w.st.UpsertQueues(w.next(), []*api.Queue{{Name: "a", Limit: &api.QueueResources{GPUs: limitA}}}); err != nil {
		t.Fatal(err)
	}
	strategy := StrategyEmpty
	if r.IntN(2) == 0 {
		strategy = StrategyLeastBusy
	}
	pol := gpuPolicy(r.IntN(3), 3+r.IntN(6), strategy)
	s := w.scaler(pol)
	jobs := []string{}
	gangs := map[string]int{}
	for step := range 60 {
		switch op := r.IntN(10); {
		case op < 4:
			id := fmt.Sprintf("j%d", step)
			q := ""
			if r.IntN(2) == 0 {
				q = "a"
			}
			var j *api.Job
			if r.IntN(3) == 0 {
				size := 2 + r.IntN(4)
				j = gpuJob(id, size, 8, true, q)
				gangs[id] = size
			} else {
				j = gpuJob(id, 1+r.IntN(3), []int{1, 2, 4, 8}[r.IntN(4)], false, q)
			}
			w.submit(j)
			jobs = append(jobs, id)
		case op < 6 && len(jobs) > 0:
			i := r.IntN(len(jobs))
			w.finish(jobs[i])
			jobs = append(jobs[:i], jobs[i+1:]...)
		case op < 9:
			w.clk.Advance(time.Duration(1+r.IntN(8)) * time.Minute)
		default:
			list, _ := w.sim.List(ctx)
			if len(list) > 0 {
				w.sim.Interrupt(list[r.IntN(len(list))].ID, time.Duration(r.IntN(3))*time.Minute)
			}
		}
		w.boot()
		w.settle()
		whole := map[string]bool{}
		for id, size := range gangs {
			whole[id] = len(w.liveAllocs(id)) == size
		}
		// Replacements of migrating allocs may need new room even in a
		// full queue: the one they replace frees its quota.
		queueAFull := queueGPUs(t, w, "a") >= limitA && !migrating(w)
		rep, err := s.Step(ctx)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		list, _ := w.sim.List(ctx)
		if len(list) > pol.Max {
			t.Fatalf("step %d: %d instances, max %d", step, len(list), pol.Max)
		}
		scaleIn := len(rep.Drained) > len(rep.Interrupted)
		if scaleIn && len(list)-len(s.removing) < pol.Min {
			t.Fatalf("step %d: scale-in left %d of %d instances staying, min %d", step, len(list)-len(s.removing), len(list), pol.Min)
		}
		if n := len(rep.Created["gpu"]); n > 0 {
			d := rep.Demand["gpu"]
			_, pending, _ := w.State()
			onlyA := len(pending) > 0
			for _, e := range pending {
				j, _ := w.st.JobByID(nil, e.Namespace, e.JobID)
				onlyA = onlyA && j != nil && j.Queue == "a"
			}
			belowMin := len(list)-n-len(s.removing) < pol.Min
			if !belowMin && queueAFull && onlyA {
				t.Fatalf("step %d: bought %d nodes (demand %+v) for work of queue a at its limit", step, n, d)
			}
			if !belowMin && d.New < n {
				t.Fatalf("step %d: bought %d nodes, demand %+v", step, n, d)
			}
		}
		w.boot()
		w.settle()
		if len(rep.Interrupted) == 0 {
			for id, was := range whole {
				if was && len(w.liveAllocs(id)) != gangs[id] {
					t.Fatalf("step %d: scale-in stranded gang %s: %d of %d running (drained %v)", step, id, len(w.liveAllocs(id)), gangs[id], rep.Drained)
				}
			}
			for a, job := range w.stopped {
				if j, _ := w.st.JobByID(nil, api.DefaultNamespace, job); j != nil && !j.Stop {
					t.Fatalf("step %d: alloc %s of job %s stopped by scale-in and not replaced", step, a, job)
				}
			}
		}
		for id, size := range gangs {
			// A member lost to a spot interruption is replaced on its own
			// (the scheduler's rule for running gangs): that gang is
			// excused until it is whole again.
			if n := len(w.liveAllocs(id)); n != 0 && n != size && !interrupted(w, id) {
				all, _ := w.st.AllocsByJob(nil, api.DefaultNamespace, id, true)
				for _, a := range all {
					t.Logf("alloc %s node %s client %s desired %s (%s) prev %s", a.ID[:8], a.NodeID[len(a.NodeID)-4:], a.ClientStatus, a.DesiredStatus, a.DesiredDescription, a.PreviousAllocation)
				}
				t.Logf("rep %+v drains %v", rep, w.drains)
				t.Fatalf("step %d: gang %s partially placed: %d of %d", step, id, n, size)
			}
		}
		clear(w.stopped)
	}
}

// queueGPUs is what a queue's live allocs hold.
func queueGPUs(t *testing.T, w *world, q string) float64 {
	snap, err := w.st.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	u, err := snap.Scheduler().QueueUsage()
	if err != nil {
		t.Fatal(err)
	}
	if r := u[q]; r != nil {
		return r.GPUs
	}
	return 0
}

// interrupted reports whether a spot interruption stopped an alloc of the
// job.
func interrupted(w *world, jobID string) bool {
	all, _ := w.st.AllocsByJob(nil, api.DefaultNamespace, jobID, true)
	for _, a := range all {
		if strings.HasSuffix(a.DesiredDescription, ReasonSpot) {
			return true
		}
	}
	return false
}

// migrating reports whether any alloc is marked to migrate and not yet
// stopped.
func migrating(w *world) bool {
	allocs, _ := w.st.Allocs(nil, api.DefaultNamespace, "")
	for _, a := range allocs {
		if a.DesiredTransition.ShouldMigrate() && a.DesiredStatus == api.AllocDesiredStatusRun && !a.ClientTerminalStatus() {
			return true
		}
	}
	return false
}

// With a live node of the pool as the template, work its fingerprint
// cannot run (here: a driver the real nodes lack) buys nothing; the bare
// shape would have bought a node for it.
func TestDemandTemplate(t *testing.T) {
	w := newWorld(t, 0)
	j := gpuJob("docker", 1, 1, false, "")
	j.TaskGroups[0].Tasks[0].Driver = "raw_exec"
	w.submit(j)
	pol := gpuPolicy(0, 4, StrategyEmpty)
	if got := demand(t, w, pol, 0, 4).New; got != 1 {
		t.Fatalf("bare shape: New = %d, want 1", got)
	}
	real := pol.Shape.Node("00000000-0000-4000-8000-000000000001", "real", "gpu")
	delete(real.Drivers, "raw_exec")
	delete(real.Attributes, "driver.raw_exec")
	real.NodeResources.Devices = nil // and full of nothing else: it simply cannot run raw_exec
	st, pending, _ := w.State()
	d, err := Demand(DemandInput{State: st, Pending: pending, Policy: pol, Room: 4, Template: real,
		Options: scheduler.Options{Now: w.clk.Now()}})
	if err != nil || d.New != 0 {
		t.Errorf("template without raw_exec: New = %d (%v), want 0", d.New, err)
	}
}

// A booting node left empty stands in for a new one: a gang of 2 x 8 GPUs
// with one node booting buys exactly one, whichever two of the three
// empty nodes each pass picks (evals with other seeds pick others).
func TestDemandBootingStandsIn(t *testing.T) {
	pol := gpuPolicy(0, 10, StrategyEmpty)
	for i := range 12 {
		w := newWorld(t, 0)
		w.seq = i * 7
		w.submit(gpuJob(fmt.Sprintf("gang%d", i), 2, 8, true, ""))
		if got := demand(t, w, pol, 1, 2).New; got != 1 {
			t.Errorf("eval seed %d: New = %d, want 1", i, got)
		}
	}
}
