package scheduler

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// gangGPUNode is a node with gpus healthy GPUs (no link data).
func gangGPUNode(name string, gpus int) *api.Node {
	n := testNode(name, "dc1", 64000, 512000)
	var inst []*api.NodeDevice
	for i := 0; i < gpus; i++ {
		inst = append(inst, &api.NodeDevice{ID: fmt.Sprintf("%s-GPU-%d", name, i), Healthy: true})
	}
	n.NodeResources.Devices = []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", Instances: inst}}
	return n
}

// gangJob is a batch job of one group "train" of count allocs of gpus
// GPUs each, a gang with min.
func gangJob(id string, count, gpus, min int) *api.Job {
	j := testJob(id, api.JobTypeBatch, count, 1000, 1024)
	j.TaskGroups[0].Name = "train"
	j.TaskGroups[0].Gang = &api.Gang{Min: min}
	if gpus > 0 {
		j.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(gpus)}}
	}
	j.SubmitTime = testNow.UnixNano()
	return j
}

func placedCount(p *api.Plan) int {
	n := 0
	for _, l := range p.NodeAllocation {
		n += len(l)
	}
	return n
}

func placedOf(p *api.Plan, job string) []*api.Allocation {
	var out []*api.Allocation
	for _, node := range sortedNodeKeys(p.NodeAllocation) {
		for _, a := range p.NodeAllocation[node] {
			if a.JobID == job {
				out = append(out, a)
			}
		}
	}
	return out
}

func gpuCluster(nodes, gpus int) *memState {
	st := newMemState()
	for i := range nodes {
		st.addNode(gangGPUNode(strconv.Itoa(i+1), gpus))
	}
	return st
}

func schedule(t testing.TB, st *memState, job *api.Job, n int, opts Options) *Result {
	t.Helper()
	if opts.Now.IsZero() {
		opts.Now = testNow
	}
	res, err := Schedule(st, testEval(job, n), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The case: 8 allocs x 8 GPUs on 7 free 8-GPU nodes place
// nothing (with the reason), two such jobs hold nothing, and a 1-GPU job
// still runs.
func TestGangShortPlacesNothing(t *testing.T) {
	st := gpuCluster(7, 8)
	for i, id := range []string{"a", "b"} {
		job := gangJob(id, 8, 8, 0)
		st.upsertJob(job)
		res := schedule(t, st, job, i, Options{})
		if n := placedCount(res.Plan); n != 0 {
			t.Fatalf("job %s: %d allocs placed, want none", id, n)
		}
		m := res.Eval.FailedTGAllocs["train"]
		if m == nil || !strings.Contains(m.GangFailure, "gang train needs 8 members, 7 fit") {
			t.Fatalf("job %s: failure %+v, want the gang reason", id, m)
		}
		if got := ExplainFailure("train", m); !strings.Contains(got, "8 allocs unplaced") || !strings.Contains(got, "devices") {
			t.Errorf("explain: %q", got)
		}
		if res.Eval.QueuedAllocations["train"] != 8 || res.Blocked == nil {
			t.Fatalf("job %s: queued %v, blocked %v; want 8 queued and a blocked eval", id, res.Eval.QueuedAllocations, res.Blocked)
		}
		st.apply(res.Plan)
	}
	small := testJob("small", api.JobTypeBatch, 1, 500, 256)
	small.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}
	st.upsertJob(small)
	if res := schedule(t, st, small, 3, Options{}); placedCount(res.Plan) != 1 {
		t.Fatalf("1-GPU job: %d placed, want 1", placedCount(res.Plan))
	}
}

func TestGangPlacedWholeWithInfo(t *testing.T) {
	st := gpuCluster(8, 8)
	job := gangJob("g", 8, 8, 0)
	st.upsertJob(job)
	res := schedule(t, st, job, 1, Options{})
	allocs := placedOf(res.Plan, "g")
	if len(allocs) != 8 {
		t.Fatalf("%d placed, want 8", len(allocs))
	}
	if len(res.Plan.Gangs) != 1 || len(res.Plan.Gangs[0].AllocIDs) != 8 || res.Plan.Gangs[0].ID != "train" {
		t.Fatalf("plan gangs %+v", res.Plan.Gangs)
	}
	ranks := map[int]*api.Allocation{}
	for _, a := range allocs {
		g := a.Gang
		if g == nil || g.Size != 8 || g.ID != "train" || len(g.Members) != 8 {
			t.Fatalf("alloc %s gang %+v", a.Name, g)
		}
		if ranks[g.Rank] != nil {
			t.Fatalf("rank %d twice", g.Rank)
		}
		ranks[g.Rank] = a
		if gangPort(a) == 0 {
			t.Fatalf("alloc %s has no %s port", a.Name, api.GangPortLabel)
		}
	}
	lead := ranks[0]
	n, _ := st.NodeByID(lead.NodeID)
	want := hostIP(n) + ":" + strconv.Itoa(gangPort(lead))
	for _, a := range allocs {
		if a.Gang.LeaderAddr != want {
			t.Fatalf("leader addr %q, want %q", a.Gang.LeaderAddr, want)
		}
		for _, m := range a.Gang.Members {
			if ranks[m.Rank].ID != m.AllocID || ranks[m.Rank].NodeID != m.NodeID || m.Address == "" {
				t.Fatalf("member %+v does not match", m)
			}
		}
	}
	// Running whole: a new eval changes nothing.
	st.apply(res.Plan)
	res = schedule(t, st, job, 2, Options{})
	if placedCount(res.Plan) != 0 || len(res.Plan.NodeUpdate) != 0 || res.Blocked != nil {
		t.Fatalf("re-eval of a whole gang: placed %d, stops %d, blocked %v", placedCount(res.Plan), len(res.Plan.NodeUpdate), res.Blocked)
	}
}

// An elastic gang places as many as fit, never fewer than min.
func TestGangElastic(t *testing.T) {
	st := gpuCluster(7, 8)
	job := gangJob("e", 8, 8, 6)
	st.upsertJob(job)
	res := schedule(t, st, job, 1, Options{})
	if n := placedCount(res.Plan); n != 7 {
		t.Fatalf("%d placed, want 7 (min 6, 8 wanted)", n)
	}
	if res.Blocked == nil || res.Eval.QueuedAllocations["train"] != 1 {
		t.Fatalf("blocked %v queued %v: want the last member queued", res.Blocked, res.Eval.QueuedAllocations)
	}
	st2 := gpuCluster(5, 8)
	st2.upsertJob(job)
	res = schedule(t, st2, job, 2, Options{})
	if n := placedCount(res.Plan); n != 0 {
		t.Fatalf("5 nodes: %d placed, want 0 (min 6)", n)
	}
	if m := res.Eval.FailedTGAllocs["train"]; m == nil || !strings.Contains(m.GangFailure, "needs 6 members, 5 fit") {
		t.Fatalf("failure %+v", m)
	}
}

// A job-level gang makes launcher and workers one unit.
func TestGangJobWide(t *testing.T) {
	st := gpuCluster(3, 8)
	job := gangJob("jw", 4, 8, 0)
	job.TaskGroups[0].Gang = nil
	job.Gang = &api.Gang{}
	job.TaskGroups = append(job.TaskGroups, &api.TaskGroup{Name: "launcher", Count: 1, EphemeralDisk: &api.EphemeralDisk{SizeMB: 10},
		Tasks: []*api.Task{{Name: "l", Driver: "raw_exec", Resources: &api.Resources{CPU: 100, MemoryMB: 64}}}})
	st.upsertJob(job)
	res := schedule(t, st, job, 1, Options{})
	if n := placedCount(res.Plan); n != 0 {
		t.Fatalf("%d placed, want 0 (4 workers on 3 nodes)", n)
	}
	for _, g := range []string{"train", "launcher"} {
		if m := res.Eval.FailedTGAllocs[g]; m == nil || !strings.Contains(m.GangFailure, "gang job needs 5 members, 4 fit") {
			t.Fatalf("%s: failure %+v", g, m)
		}
	}
	st.addNode(gangGPUNode("4", 8))
	res = schedule(t, st, job, 2, Options{})
	allocs := placedOf(res.Plan, "jw")
	if len(allocs) != 5 || len(res.Plan.Gangs) != 1 || res.Plan.Gangs[0].ID != api.GangJobWide {
		t.Fatalf("placed %d, gangs %+v; want 5 in one job gang", len(allocs), res.Plan.Gangs)
	}
}

// A lost member of a whole gang is replaced alone, keeping its rank.
func TestGangReplacementKeepsRank(t *testing.T) {
	st := gpuCluster(9, 8)
	job := gangJob("r", 8, 8, 0)
	st.upsertJob(job)
	res := schedule(t, st, job, 1, Options{})
	st.apply(res.Plan)
	var lost *api.Allocation
	for _, a := range st.liveAllocs(api.DefaultNamespace, "r") {
		if a.Gang.Rank == 3 {
			lost = a
		}
	}
	for _, n := range st.nodes {
		if n.ID == lost.NodeID {
			n.Status = api.NodeStatusDown
		}
	}
	res = schedule(t, st, job, 2, Options{})
	var fresh, refreshed []*api.Allocation
	for _, a := range placedOf(res.Plan, "r") {
		if st.allocs[a.ID] == nil {
			fresh = append(fresh, a)
		} else {
			refreshed = append(refreshed, a)
		}
	}
	if len(fresh) != 1 || fresh[0].Gang == nil || fresh[0].Gang.Rank != 3 || fresh[0].Gang.Size != 8 {
		t.Fatalf("replacement %+v, want one alloc of rank 3 in a gang of 8", fresh)
	}
	// The running members learn the new member (in-place updates).
	if len(refreshed) != 7 {
		t.Fatalf("%d running members refreshed, want 7", len(refreshed))
	}
	for _, a := range refreshed {
		if a.Gang.Members[3].AllocID != fresh[0].ID || a.Gang.Rank == 3 {
			t.Fatalf("member %s: gang %+v does not list the replacement at rank 3", a.Name, a.Gang)
		}
	}
	if len(res.Plan.Gangs) != 1 || len(res.Plan.Gangs[0].AllocIDs) != 8 {
		t.Fatalf("plan gangs %+v", res.Plan.Gangs)
	}
}

// A gang below min past its grace period is stopped and placed again
// whole; before the grace ends a follow-up eval waits for the deadline.
func TestGangStale(t *testing.T) {
	st := gpuCluster(8, 8)
	job := gangJob("s", 8, 8, 0)
	job.TaskGroups[0].ReschedulePolicy = &api.ReschedulePolicy{Attempts: 0}
	job.TaskGroups[0].Gang.StaleGrace = time.Minute
	st.upsertJob(job)
	res := schedule(t, st, job, 1, Options{})
	st.apply(res.Plan)
	failed := st.liveAllocs(api.DefaultNamespace, "s")[0].Copy()
	failed.ClientStatus = api.AllocClientStatusFailed
	failed.ModifyTime = testNow.UnixNano()
	st.upsertAlloc(failed)

	res = schedule(t, st, job, 2, Options{Now: testNow.Add(20 * time.Second)})
	if placedCount(res.Plan) != 0 || len(res.Plan.NodeUpdate) != 0 {
		t.Fatalf("within grace: placed %d, stops %v", placedCount(res.Plan), res.Plan.NodeUpdate)
	}
	if len(res.FollowUps) != 1 || !res.FollowUps[0].WaitUntil.Equal(testNow.Add(time.Minute)) {
		t.Fatalf("follow-ups %+v, want one at the grace deadline", res.FollowUps)
	}
	res = schedule(t, st, job, 3, Options{Now: testNow.Add(2 * time.Minute)})
	stops := 0
	for _, l := range res.Plan.NodeUpdate {
		for _, a := range l {
			stops++
			if !strings.Contains(a.DesiredDescription, "gang train below min for 2m0s") {
				t.Fatalf("stop description %q", a.DesiredDescription)
			}
		}
	}
	if stops != 7 || placedCount(res.Plan) != 8 {
		t.Fatalf("stale gang: %d stopped, %d placed; want 7 and 8", stops, placedCount(res.Plan))
	}
}

// An unplaced gang fails after its timeout: no blocked eval then; before
// it, a follow-up eval at the deadline.
func TestGangTimeout(t *testing.T) {
	st := gpuCluster(7, 8)
	job := gangJob("t", 8, 8, 0)
	job.TaskGroups[0].Gang.Timeout = 10 * time.Minute
	st.upsertJob(job)
	res := schedule(t, st, job, 1, Options{Now: testNow.Add(time.Minute)})
	if res.Blocked == nil || len(res.FollowUps) != 1 || !res.FollowUps[0].WaitUntil.Equal(testNow.Add(10*time.Minute)) {
		t.Fatalf("waiting: blocked %v, follow-ups %+v", res.Blocked, res.FollowUps)
	}
	res = schedule(t, st, job, 2, Options{Now: testNow.Add(11 * time.Minute)})
	if res.Blocked != nil || len(res.FollowUps) != 0 {
		t.Fatalf("timed out: blocked %v, follow-ups %v; want neither", res.Blocked, res.FollowUps)
	}
	if m := res.Eval.FailedTGAllocs["train"]; m == nil || !strings.Contains(m.GangFailure, "gang train timed out after 10m0s") {
		t.Fatalf("failure %+v", m)
	}
	if !strings.Contains(res.Eval.StatusDescription, "gang train timed out after 10m0s") {
		t.Fatalf("status %q", res.Eval.StatusDescription)
	}
}

// A gang member that preempted is rolled back with its evictions.
func TestGangRollbackUndoesPreemption(t *testing.T) {
	st := gpuCluster(7, 8)
	low := testJob("low", api.JobTypeBatch, 7, 100, 64)
	low.Priority = 10
	low.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 8}}
	st.upsertJob(low)
	st.apply(schedule(t, st, low, 1, Options{}).Plan)
	job := gangJob("hi", 8, 8, 0)
	job.Priority = 90
	st.upsertJob(job)
	opts := Options{Preemption: &PreemptionConfig{BatchSchedulerEnabled: true}}
	res := schedule(t, st, job, 2, opts)
	if placedCount(res.Plan) != 0 || len(res.Plan.NodePreemptions) != 0 {
		t.Fatalf("placed %d, preemptions %v; want nothing", placedCount(res.Plan), res.Plan.NodePreemptions)
	}
	if a := res.Plan.Annotations; a != nil && len(a.PreemptedAllocs) != 0 {
		t.Fatalf("annotated preemptions %v", a.PreemptedAllocs)
	}
	// With room for the eighth member the gang preempts and places.
	st.addNode(gangGPUNode("8", 8))
	res = schedule(t, st, job, 3, opts)
	if placedCount(res.Plan) != 8 || len(res.Plan.NodePreemptions) != 7 {
		t.Fatalf("placed %d, preempted on %d nodes; want 8 and 7", placedCount(res.Plan), len(res.Plan.NodePreemptions))
	}
}

// A member lost with no room for its replacement: the gang waits out the
// grace period (follow-up eval at its end), then stops whole and, still
// not fitting, holds nothing.
func TestGangStaleNoRoomHoldsNothing(t *testing.T) {
	st := gpuCluster(8, 8)
	job := gangJob("s", 8, 8, 0)
	st.upsertJob(job)
	st.apply(schedule(t, st, job, 1, Options{}).Plan)
	st.nodes[0].Status = api.NodeStatusDown
	res := schedule(t, st, job, 2, Options{})
	if placedCount(res.Plan) != 0 || res.Blocked == nil {
		t.Fatalf("lost member without room: placed %d, blocked %v", placedCount(res.Plan), res.Blocked)
	}
	if len(res.FollowUps) != 1 || !res.FollowUps[0].WaitUntil.Equal(testNow.Add(api.DefaultGangStaleGrace)) {
		t.Fatalf("follow-ups %+v, want one at the grace deadline", res.FollowUps)
	}
	if m := res.Eval.FailedTGAllocs["train"]; m == nil || !strings.Contains(m.GangFailure, "needs 1 more members (min 8, 7 running), 0 fit") {
		t.Fatalf("failure %+v", m)
	}
	st.apply(res.Plan)
	res = schedule(t, st, job, 3, Options{Now: testNow.Add(time.Minute)})
	st.apply(res.Plan)
	if n := len(st.liveAllocs(api.DefaultNamespace, "s")); n != 0 || res.Blocked == nil {
		t.Fatalf("stale gang without room: %d members still running, blocked %v; want 0 and a blocked eval", n, res.Blocked)
	}
}

// A gang attempt that falls short leaves the pass as it found it: node
// usage, stops (preemption victims), cursors and counters, the plan, the
// failure metrics and queued counts.
func TestGangAttemptRollbackRestoresPass(t *testing.T) {
	held := 0
	for seed := range uint64(200) {
		s := journalPass(t, rand.New(rand.NewPCG(seed, 17)))
		run := &gangRun{id: "job", gang: &api.Gang{}, groups: s.env.job.TaskGroups, staleStops: map[string]bool{}}
		for _, tg := range s.env.job.TaskGroups {
			for i := range tg.Count {
				run.places = append(run.places, &placement{tg: tg, index: i})
			}
		}
		before := snapPass(s)
		plan := fmt.Sprintf("%+v %v %v %v", s.out.plan.NodeAllocation, s.out.plan.NodePreemptions, s.out.plan.NodeUpdate, s.out.plan.Annotations)
		metrics := fmt.Sprintf("%v %v", s.out.failed, s.out.queued)
		got, ok, _ := s.pl.gangs.tryGang(run, len(run.places)+1, nil)
		if ok {
			t.Fatalf("seed %d: attempt needing more members than asked was kept", seed)
		}
		held += len(got)
		if after := snapPass(s); !reflect.DeepEqual(before, after) {
			t.Fatalf("seed %d: node state not restored:\nbefore %+v\nafter  %+v", seed, before, after)
		}
		if p := fmt.Sprintf("%+v %v %v %v", s.out.plan.NodeAllocation, s.out.plan.NodePreemptions, s.out.plan.NodeUpdate, s.out.plan.Annotations); p != plan {
			t.Fatalf("seed %d: plan changed:\nbefore %s\nafter  %s", seed, plan, p)
		}
		if m := fmt.Sprintf("%v %v", s.out.failed, s.out.queued); m != metrics {
			t.Fatalf("seed %d: metrics changed: %s -> %s", seed, metrics, m)
		}
		if len(s.led.undo) != 0 || s.led.undoDepth != 0 {
			t.Fatalf("seed %d: journal left open", seed)
		}
	}
	if held == 0 {
		t.Fatal("no attempt placed anything: nothing was rolled back")
	}
}
