package scheduler

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// gangInfos are the gang info of the job's live allocs, by alloc ID (what
// checkGangInfo compares a plan's result with).
func gangInfos(st *memState, job *api.Job) map[string]*api.AllocGang {
	out := map[string]*api.AllocGang{}
	for _, a := range st.liveAllocs(job.Namespace, job.ID) {
		out[a.ID] = a.Gang
	}
	return out
}

// checkGangInfo holds the state after a plan was applied to the gang
// invariant over the life cycle. When the plan placed members of a gang
// or changed their gang info, every live member carries the same member list, which lists
// each of them once with ranks 0..Size-1 (besides them only batch members
// that finished their work), one leader address (rank 0's), and with the
// finished members they reach the gang's min. In a rigid gang (no min
// below its size) a member that was running before keeps its rank and
// size: its tasks were started with them (an elastic gang's members may
// be renumbered as members come and go).
func checkGangInfo(t *testing.T, desc string, st *memState, job *api.Job, plan *api.Plan, before map[string]*api.AllocGang) {
	t.Helper()
	inPlan := map[string]bool{}
	for _, l := range plan.NodeAllocation {
		for _, a := range l {
			inPlan[a.ID] = true
		}
	}
	for _, id := range gangIDs(job) {
		var live []*api.Allocation
		done := map[string]bool{}
		total, min := 0, 0
		for _, tg := range job.TaskGroups {
			if g, gid := job.GangOf(tg); gid == id {
				total += tg.Count
				min = g.Min
			}
		}
		if min <= 0 || min > total {
			min = total
		}
		for _, a := range st.byJob[job.Namespace+"/"+job.ID] {
			tg := job.LookupTaskGroup(a.TaskGroup)
			if tg == nil {
				continue
			}
			if _, gid := job.GangOf(tg); gid != id {
				continue
			}
			switch {
			case !a.TerminalStatus():
				live = append(live, a)
			case job.Type == api.JobTypeBatch && a.DesiredStatus == api.AllocDesiredStatusRun &&
				a.ClientStatus == api.AllocClientStatusComplete && a.NextAllocation == "":
				done[a.ID] = true
			}
		}
		// The plan placed members or changed their gang info (an in-place
		// update of the job alone leaves a gang waiting for a
		// replacement as it was).
		touched := false
		for _, a := range live {
			old, was := before[a.ID]
			touched = touched || inPlan[a.ID] && (!was || fmt.Sprintf("%+v", old) != fmt.Sprintf("%+v", a.Gang))
		}
		if !touched {
			continue
		}
		if len(live)+len(done) < min {
			t.Fatalf("%s: gang %s placed partly: %d members running, %d finished, min %d", desc, id, len(live), len(done), min)
		}
		sort.Slice(live, func(i, j int) bool { return live[i].ID < live[j].ID })
		var want *api.AllocGang
		for _, a := range live {
			g := a.Gang
			if g == nil {
				t.Fatalf("%s: gang %s member %s has no gang info", desc, id, a.ID)
			}
			if want == nil {
				want = g
			}
			if g.ID != id || g.Size != len(g.Members) || g.LeaderAddr != want.LeaderAddr || fmt.Sprint(g.Members) != fmt.Sprint(want.Members) {
				t.Fatalf("%s: gang %s member %s has info %+v, another has %+v", desc, id, a.ID, g, want)
			}
			if old := before[a.ID]; old != nil && old.ID == id && min == total && (old.Rank != g.Rank || old.Size != g.Size) {
				t.Fatalf("%s: gang %s running member %s went from rank %d of %d to rank %d of %d", desc, id, a.ID, old.Rank, old.Size, g.Rank, g.Size)
			}
		}
		listed := map[string]int{}
		for i, m := range want.Members {
			if m.Rank != i {
				t.Fatalf("%s: gang %s member list %+v: ranks are not 0..%d", desc, id, want.Members, len(want.Members)-1)
			}
			listed[m.AllocID] = m.Rank
			if st.allocs[m.AllocID].TerminalStatus() && !done[m.AllocID] {
				t.Fatalf("%s: gang %s lists %s (rank %d), which is stopped", desc, id, m.AllocID, m.Rank)
			}
			if m.Rank == 0 && !strings.HasPrefix(want.LeaderAddr, m.Address) {
				t.Fatalf("%s: gang %s leader address %q is not rank 0's (%q)", desc, id, want.LeaderAddr, m.Address)
			}
		}
		for _, a := range live {
			if r, ok := listed[a.ID]; !ok || r != a.Gang.Rank {
				t.Fatalf("%s: gang %s member %s (rank %d) is not in its member list %+v", desc, id, a.ID, a.Gang.Rank, want.Members)
			}
		}
	}
}

// gangIDs are the job's gangs in group order.
func gangIDs(job *api.Job) []string {
	var ids []string
	seen := map[string]bool{}
	for _, tg := range job.TaskGroups {
		if g, id := job.GangOf(tg); g != nil && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// The preempt -> replace case: a two-member batch gang (no min)
// is evicted whole by a higher-priority job pinned to one of its nodes;
// the clients report the victims finished (complete or failed) in any
// order, and the gang is evaluated before, between and after the
// reports. With room for one member only it must hold nothing; with room
// for both it is placed whole, once, with ranks 0 and 1.
func TestGangPreemptedThenReplacedWhole(t *testing.T) {
	// Every order of: report victim 0, report victim 1, with an eval of
	// the gang after each step (and one before any report).
	orders := [][]int{{0, 1}, {1, 0}}
	for _, room := range []int{1, 2} {
		for _, order := range orders {
			for _, status := range []string{api.AllocClientStatusComplete, api.AllocClientStatusFailed} {
				t.Run(fmt.Sprintf("room%d/%v/%s", room, order, status), func(t *testing.T) {
					// Nodes 1 and 2 hold the gang; node 3 is the spare
					// when there is room for both members.
					st := gpuCluster(1+room, 8)
					job := gangJob("torch", 2, 8, 0)
					job.TaskGroups[0].Gang.Topology = &api.Topology{Level: "rack", Mode: api.TopologyPreferred}
					st.upsertJob(job)
					st.apply(schedule(t, st, job, 1, Options{}).Plan)
					members := st.liveAllocs(api.DefaultNamespace, "torch")
					if len(members) != 2 {
						t.Fatalf("%d members running, want 2", len(members))
					}
					hi := testJob("hi", api.JobTypeBatch, 1, 1000, 1024)
					hi.Priority = 90
					hi.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 8}}
					hi.Constraints = []*api.Constraint{{LTarget: "${node.unique.id}", RTarget: members[0].NodeID, Operand: "="}}
					st.upsertJob(hi)
					opts := Options{Preemption: &PreemptionConfig{BatchSchedulerEnabled: true}}
					res := schedule(t, st, hi, 2, opts)
					if n := len(res.Plan.NodePreemptions); n != 2 {
						t.Fatalf("preempted on %d nodes, want the whole gang on 2", n)
					}
					st.apply(res.Plan)

					n := 2
					eval := func(when string) {
						n++
						res := schedule(t, st, job, n, opts)
						checkGangPlan(t, when, st, job, res.Plan)
						before := gangInfos(st, job)
						st.apply(res.Plan)
						checkGangInfo(t, when, st, job, res.Plan, before)
						live := st.liveAllocs(api.DefaultNamespace, "torch")
						if len(live) != 0 && len(live) != 2 {
							t.Fatalf("%s: %d members running, want 0 or 2", when, len(live))
						}
						if room == 1 && len(live) != 0 {
							t.Fatalf("%s: %d members placed with room for one", when, len(live))
						}
					}
					eval("before the reports")
					for i, v := range order {
						c := st.allocs[members[v].ID].Copy()
						c.ClientStatus = status
						c.ModifyTime = testNow.UnixNano()
						st.upsertAlloc(c)
						eval(fmt.Sprintf("after report %d (victim %d %s)", i+1, v, status))
					}
					if live := st.liveAllocs(api.DefaultNamespace, "torch"); room == 2 && len(live) != 2 {
						t.Fatalf("with room for both: %d members running at the end, want 2", len(live))
					}
				})
			}
		}
	}
}

// gangWorld is a cluster, its jobs and the clock that a random sequence
// of life-cycle events drives (TestGangLifecycleProperty).
type gangWorld struct {
	t    *testing.T
	r    *rand.Rand
	seed int
	st   *memState
	jobs []*api.Job
	now  time.Time
	opts Options
	n    int      // evals run
	log  []string // the events so far, for failure messages
	hi   int      // preempting jobs made
	// placed counts plans that placed gang members, failed passes with a
	// gang failure, evicted the allocs preempted, restarted the members
	// stopped to restart their gang (stale or resized): the workload must
	// exercise them all.
	placed, failed, evicted, restarted int
}

func (w *gangWorld) desc() string {
	return fmt.Sprintf("seed %d after %v", w.seed, w.log)
}

// eval runs one pass of job, holds its plan to the gang invariants
// before and after applying it, and keeps its blocked eval (the job's
// reservation) as the server would.
func (w *gangWorld) eval(job *api.Job) {
	w.n++
	o := w.opts
	o.Now = w.now
	res, err := Schedule(w.st, testEval(job, w.n), o)
	if err != nil {
		w.t.Fatalf("%s: eval %s: %v", w.desc(), job.ID, err)
	}
	desc := fmt.Sprintf("%s: eval %d of %s", w.desc(), w.n, job.ID)
	checkGangPlan(w.t, desc, w.st, job, res.Plan)
	if len(res.Plan.Gangs) > 0 {
		w.placed++
	}
	for _, l := range res.Plan.NodePreemptions {
		w.evicted += len(l)
	}
	for _, l := range res.Plan.NodeUpdate {
		for _, a := range l {
			if strings.HasPrefix(a.DesiredDescription, "gang ") {
				w.restarted++
			}
		}
	}
	for _, m := range res.Eval.FailedTGAllocs {
		if m.GangFailure != "" {
			w.failed++
			break
		}
	}
	before := gangInfos(w.st, job)
	w.st.apply(res.Plan)
	checkGangInfo(w.t, desc, w.st, job, res.Plan, before)
	for id, e := range w.st.evals {
		if e.JobID == job.ID {
			delete(w.st.evals, id)
		}
	}
	if res.Blocked != nil {
		w.st.upsertEval(res.Blocked)
	}
}

// pass evaluates every job (the evals the event triggers).
func (w *gangWorld) pass() {
	for _, j := range w.jobs {
		w.eval(j)
	}
}

// liveGangAllocs are the running allocs of the gang jobs, by ID.
func (w *gangWorld) liveGangAllocs() []*api.Allocation {
	var out []*api.Allocation
	for _, j := range w.jobs {
		if len(gangIDs(j)) > 0 {
			out = append(out, w.st.liveAllocs(j.Namespace, j.ID)...)
		}
	}
	return out
}

// step makes one random event happen, then evaluates the jobs.
func (w *gangWorld) step() {
	r, st := w.r, w.st
	switch r.IntN(9) {
	case 0: // placement (or nothing changed: the evals must be no-ops)
		w.log = append(w.log, "eval")
	case 1: // preemption by a higher-priority job pinned to a member's node
		live := w.liveGangAllocs()
		if len(live) == 0 {
			w.log = append(w.log, "preempt(none)")
			break
		}
		v := live[r.IntN(len(live))]
		node, _ := st.NodeByID(v.NodeID)
		w.hi++
		hi := testJob(fmt.Sprint("hi", w.hi), api.JobTypeBatch, 1, 1000, 512)
		hi.Priority = 100
		hi.Constraints = []*api.Constraint{{LTarget: "${node.unique.id}", RTarget: node.ID, Operand: "="}}
		if gpus := len(node.NodeResources.Devices); gpus > 0 && len(node.NodeResources.Devices[0].Instances) > 0 {
			hi.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(len(node.NodeResources.Devices[0].Instances))}}
		} else {
			hi.TaskGroups[0].Tasks[0].Resources.CPU = int(node.NodeResources.Cpu.CpuShares) - r.IntN(1000)
		}
		st.upsertJob(hi)
		w.log = append(w.log, "preempt("+node.ID+")")
		w.eval(hi)
	case 2: // node down
		n := st.nodes[r.IntN(len(st.nodes))]
		c := *n
		c.Status = api.NodeStatusDown
		w.replaceNode(&c)
		w.log = append(w.log, "down("+n.ID+")")
	case 3: // drain: the node takes no work, its allocs are to migrate
		n := st.nodes[r.IntN(len(st.nodes))]
		c := *n
		c.Drain = true
		c.SchedulingEligibility = api.NodeSchedulingIneligible
		w.replaceNode(&c)
		yes := true
		for _, a := range st.byNode[n.ID] {
			if !a.TerminalStatus() {
				m := a.Copy()
				m.DesiredTransition.Migrate = &yes
				st.upsertAlloc(m)
			}
		}
		w.log = append(w.log, "drain("+n.ID+")")
	case 4: // a member fails
		live := w.liveGangAllocs()
		if len(live) == 0 {
			w.log = append(w.log, "fail(none)")
			break
		}
		c := live[r.IntN(len(live))].Copy()
		c.ClientStatus = api.AllocClientStatusFailed
		c.ModifyTime = w.now.UnixNano()
		st.upsertAlloc(c)
		w.log = append(w.log, "fail("+c.ID+")")
	case 5: // clients report some stopping allocs finished
		w.reportStopped()
		w.log = append(w.log, "reports")
	case 6: // a job update: destructive (resources) or a new count
		j := w.jobs[r.IntN(len(w.jobs))]
		c := j.Copy()
		tg := c.TaskGroups[r.IntN(len(c.TaskGroups))]
		if r.IntN(2) == 0 {
			tg.Tasks[0].Resources.CPU += 100
		} else {
			tg.Count = 1 + r.IntN(6)
			if g, _ := c.GangOf(tg); g != nil && g.Min > 0 {
				total := 0
				for _, x := range c.TaskGroups {
					if gx, _ := c.GangOf(x); gx == g {
						total += x.Count
					}
				}
				g.Min = min(g.Min, total)
			}
		}
		st.upsertJob(c)
		for i := range w.jobs {
			if w.jobs[i].ID == c.ID {
				w.jobs[i] = c
			}
		}
		w.log = append(w.log, "update("+c.ID+")")
	case 7: // time passes: reschedule delays and stale grace run out
		w.now = w.now.Add(time.Duration(10+r.IntN(170)) * time.Second)
		w.log = append(w.log, "later")
	case 8: // a leader change: the new leader's state is a restored snapshot
		w.st = restoreMemState(w.t, w.st)
		for i, j := range w.jobs {
			w.jobs[i] = w.st.jobs[j.Namespace+"/"+j.ID]
		}
		w.log = append(w.log, "leader")
	}
	w.pass()
}

// replaceNode stores n in place of the node with its ID (nodes are never
// modified in place: passes share them).
func (w *gangWorld) replaceNode(n *api.Node) {
	st := w.st
	for i, x := range st.nodes {
		if x.ID == n.ID {
			st.nodes[i] = n
		}
	}
	st.index++
}

// reportStopped has the clients report a random part of the allocs the
// server stopped (or evicted) but that still run: complete or failed, as
// a killed task may exit either way; a lost node reports nothing.
func (w *gangWorld) reportStopped() {
	st := w.st
	var ids []string
	for id, a := range st.allocs {
		if a.DesiredStatus != api.AllocDesiredStatusRun && !a.ClientTerminalStatus() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		if w.r.IntN(2) == 0 {
			continue
		}
		c := st.allocs[id].Copy()
		c.ClientStatus = api.AllocClientStatusComplete
		if w.r.IntN(3) == 0 {
			c.ClientStatus = api.AllocClientStatusFailed
		}
		c.ModifyTime = w.now.UnixNano()
		st.upsertAlloc(c)
	}
}

// restoreMemState is what a new leader starts from: a snapshot of st
// written out and read back (every object a copy, as a restore from the
// Raft snapshot gives).
func restoreMemState(t *testing.T, st *memState) *memState {
	t.Helper()
	type snap struct {
		Index  uint64
		Jobs   []*api.Job
		Nodes  []*api.Node
		Allocs []*api.Allocation
		Evals  []*api.Evaluation
	}
	s := snap{Index: st.index, Nodes: st.nodes}
	for _, j := range st.jobs {
		s.Jobs = append(s.Jobs, j)
	}
	for _, a := range st.allocs {
		s.Allocs = append(s.Allocs, a)
	}
	for _, e := range st.evals {
		s.Evals = append(s.Evals, e)
	}
	sort.Slice(s.Jobs, func(i, j int) bool { return s.Jobs[i].CreateIndex < s.Jobs[j].CreateIndex })
	sort.Slice(s.Allocs, func(i, j int) bool { return s.Allocs[i].CreateIndex < s.Allocs[j].CreateIndex })
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got snap
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	out := newMemState()
	out.nodes = got.Nodes
	for _, j := range got.Jobs {
		out.jobs[j.Namespace+"/"+j.ID] = j
	}
	for _, a := range got.Allocs {
		out.allocs[a.ID] = a
		out.byJob[a.Namespace+"/"+a.JobID] = append(out.byJob[a.Namespace+"/"+a.JobID], a)
		out.byNode[a.NodeID] = append(out.byNode[a.NodeID], a)
	}
	for _, e := range got.Evals {
		out.evals[e.ID] = e
	}
	out.index = got.Index
	return out
}

// Property: over random sequences of life-cycle events (placement,
// preemption by a higher-priority job, node loss, drain, a failed member,
// clients reporting stopped members in any order, a job update, time
// passing past reschedule delays and stale grace, a leader change), every
// plan places a gang whole (at its min) with fresh ranks 0..N-1 and one
// leader address, or places none of it.
func TestGangLifecycleProperty(t *testing.T) {
	w := &gangWorld{t: t}
	for seed := range 300 {
		r := rand.New(rand.NewPCG(uint64(seed), 48))
		*w = gangWorld{t: t, r: r, seed: seed, st: randGangCluster(r), now: testNow,
			placed: w.placed, failed: w.failed, evicted: w.evicted, restarted: w.restarted}
		w.opts = Options{Preemption: &PreemptionConfig{BatchSchedulerEnabled: true}}
		for i := range 1 + r.IntN(3) {
			j := randGangJob(r, fmt.Sprint("j", i))
			w.st.upsertJob(j)
			w.jobs = append(w.jobs, j)
		}
		w.pass()
		for range 6 + r.IntN(10) {
			w.step()
		}
	}
	if w.placed == 0 || w.failed == 0 || w.evicted == 0 || w.restarted == 0 {
		t.Fatalf("gangs placed %d, failed %d, allocs evicted %d, members restarted %d: the workload does not exercise them all",
			w.placed, w.failed, w.evicted, w.restarted)
	}
	t.Logf("plans with gangs placed: %d, passes with a gang failure: %d, allocs evicted: %d, members restarted: %d",
		w.placed, w.failed, w.evicted, w.restarted)
}

// A job update that changes a rigid gang's size restarts it whole: its
// running members were started with the old world size and member list,
// so every one is stopped (no in-place update is left to revive it) and
// the gang is placed again with ranks 0..N-1; with no room for the new
// size it holds nothing. An elastic gang's count change stops or adds
// members one by one.
func TestGangResizeRestartsWhole(t *testing.T) {
	for _, c := range []struct {
		name          string
		from, to, min int
		nodes         int
		stops, placed int
	}{
		{"shrink", 3, 2, 0, 4, 3, 2},
		{"grow", 2, 3, 0, 4, 2, 3},
		{"grow-no-room", 2, 3, 0, 2, 2, 0},
		{"elastic-shrink", 3, 2, 1, 4, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := gpuCluster(c.nodes, 8)
			job := gangJob("g", c.from, 8, c.min)
			st.upsertJob(job)
			st.apply(schedule(t, st, job, 1, Options{}).Plan)
			upd := job.Copy()
			upd.TaskGroups[0].Count = c.to
			st.upsertJob(upd)
			before := gangInfos(st, upd)
			res := schedule(t, st, upd, 2, Options{})
			stopped := map[string]bool{}
			for _, l := range res.Plan.NodeUpdate {
				for _, a := range l {
					stopped[a.ID] = true
				}
			}
			placed := 0
			for _, a := range placedOf(res.Plan, "g") {
				if stopped[a.ID] {
					t.Fatalf("%s is both stopped and updated in place by the plan", a.ID)
				}
				if st.allocs[a.ID] == nil {
					placed++
				}
			}
			if len(stopped) != c.stops || placed != c.placed {
				t.Fatalf("stopped %d, placed %d; want %d and %d", len(stopped), placed, c.stops, c.placed)
			}
			checkGangPlan(t, c.name, st, upd, res.Plan)
			st.apply(res.Plan)
			checkGangInfo(t, c.name, st, upd, res.Plan, before)
			live := st.liveAllocs(api.DefaultNamespace, "g")
			if want := c.to; c.placed == 0 && c.min == 0 {
				if len(live) != 0 {
					t.Fatalf("%d members run, want none", len(live))
				}
			} else if len(live) != want {
				t.Fatalf("%d members run, want %d", len(live), want)
			}
		})
	}
}

// A member's rank is always below its gang's size: a replacement does
// not take back a rank the shrunk gang no longer has, and a running
// member holding one is renumbered (an elastic gang's members may be).
func TestGangRanksBelowSize(t *testing.T) {
	st := gpuCluster(4, 8)
	job := gangJob("e", 4, 8, 1)
	st.upsertJob(job)
	st.apply(schedule(t, st, job, 1, Options{}).Plan)
	live := st.liveAllocs(api.DefaultNamespace, "e") // e.train[0..3], ranks 0..3
	// Members 0 and 1 fail and the job shrinks to 3: members 2 and 3 run
	// on and one failed member is placed again, in a gang of 3.
	upd := job.Copy()
	upd.TaskGroups[0].Count = 3
	upd.TaskGroups[0].ReschedulePolicy = &api.ReschedulePolicy{Attempts: 1, Interval: time.Hour, Unlimited: true}
	st.upsertJob(upd)
	for _, a := range live[:2] {
		c := a.Copy()
		c.ClientStatus = api.AllocClientStatusFailed
		c.ModifyTime = testNow.UnixNano()
		st.upsertAlloc(c)
	}
	// Member 2 carries a rank the 3-member gang does not have (as member
	// 3 does).
	m2 := st.allocs[live[2].ID].Copy()
	m2.Gang.Rank = 3
	st.upsertAlloc(m2)
	before := gangInfos(st, upd)
	res := schedule(t, st, upd, 2, Options{})
	checkGangPlan(t, "shrunk", st, upd, res.Plan)
	st.apply(res.Plan)
	checkGangInfo(t, "shrunk", st, upd, res.Plan, before)
	got := st.liveAllocs(api.DefaultNamespace, "e")
	if len(got) != 3 {
		t.Fatalf("%d members run, want 3", len(got))
	}
	ranks := map[int]bool{}
	for _, a := range got {
		if a.Gang == nil || a.Gang.Size != 3 || a.Gang.Rank > 2 || ranks[a.Gang.Rank] {
			t.Fatalf("member %s: gang %+v, want a distinct rank 0..2 of 3", a.Name, a.Gang)
		}
		ranks[a.Gang.Rank] = true
	}
}

// A failed alloc given its follow-up eval on a node since gone down (or
// draining) is only an annotation of the stored alloc: the node fits it.
// A placement there still does not.
func TestNodePlanFitsTerminalOnDownNode(t *testing.T) {
	st := gpuCluster(1, 8)
	job := gangJob("f", 1, 1, 0)
	st.upsertJob(job)
	st.apply(schedule(t, st, job, 1, Options{}).Plan)
	failed := st.liveAllocs(api.DefaultNamespace, "f")[0].Copy()
	failed.ClientStatus = api.AllocClientStatusFailed
	st.upsertAlloc(failed)
	down := *st.nodes[0]
	down.Status = api.NodeStatusDown
	st.nodes[0] = &down
	note := failed.Copy()
	note.FollowupEvalID = "eval-later"
	plan := &api.Plan{}
	plan.AppendAlloc(note)
	if ok, why, err := NodePlanFits(st, plan, down.ID); err != nil || !ok {
		t.Fatalf("a terminal alloc's annotation on a down node: fits %v (%s, %v), want true", ok, why, err)
	}
	live := failed.Copy()
	live.ID, live.ClientStatus = "new", api.AllocClientStatusPending
	plan.AppendAlloc(live)
	if ok, _, _ := NodePlanFits(st, plan, down.ID); ok {
		t.Fatal("a placement on a down node fits")
	}
}
