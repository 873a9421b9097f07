package scheduler

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
	"github.com/google/go-cmp/cmp"
)

// usageWorld is one seeded random sequence of events on the real state
// store (server/state, whose scheduler view is a VersionedState). Every
// eval is scheduled twice on one snapshot: with the UsageCache the world
// keeps across the whole sequence, and without one; the plan with the
// cache is then committed as the FSM commits the applier's result (the
// store's UpsertPlanResults; no fit re-check, as memState.apply).
type usageWorld struct {
	t     *testing.T
	seed  uint64
	rng   *rand.Rand
	st    *state.StateStore
	index uint64
	now   time.Time
	nodes []string
	jobs  []string // registered, in order (stopped ones too)
	cache *UsageCache
	// blocked is each job's blocked eval, scheduled again for the job.
	blocked map[string]*api.Evaluation
	tally   usageTally
}

// usageTally counts what the sequences did, so the test can tell it
// compared passes worth comparing.
type usageTally struct {
	evals, plans    int // plans: those that change something
	retries         int // plans turned down and scheduled again
	lookups, misses int // of the cache (cacheView)
	// Of the committed plans: placements asking whole GPUs and shares,
	// in-place updates, stops and evictions.
	wholeGPUs, shares, inPlace, stops, evictions int
}

func (a *usageTally) add(b usageTally) {
	a.evals, a.plans, a.retries = a.evals+b.evals, a.plans+b.plans, a.retries+b.retries
	a.lookups, a.misses = a.lookups+b.lookups, a.misses+b.misses
	a.wholeGPUs, a.shares, a.inPlace = a.wholeGPUs+b.wholeGPUs, a.shares+b.shares, a.inPlace+b.inPlace
	a.stops, a.evictions = a.stops+b.stops, a.evictions+b.evictions
}

// count tallies a plan committed on snap.
func (a *usageTally) count(snap *state.Snapshot, p *api.Plan) {
	if !p.IsNoOp() {
		a.plans++
	}
	for _, list := range p.NodeAllocation {
		for _, al := range list {
			if old, _ := snap.AllocByID(nil, al.ID); old != nil {
				a.inPlace++
				continue
			}
			for _, tr := range al.AllocatedResources.Tasks {
				for _, d := range tr.Devices {
					if d.Share != nil {
						a.shares++
					} else {
						a.wholeGPUs++
					}
				}
			}
		}
	}
	for _, list := range p.NodeUpdate {
		a.stops += len(list)
	}
	for _, list := range p.NodePreemptions {
		a.evictions += len(list)
	}
}

// cacheView is the scheduler view of a pass with the cache. It counts
// the cache's lookups (NodeAllocsVersion, as the pass loads a node) and
// its misses: lookups the pass follows with a read of the node's allocs
// (the cache's own on a miss, or the uncached load when the plan stops
// one of them). The pass reads a node's allocs only to load it.
type cacheView struct {
	*state.SchedulerView
	tally *usageTally
	last  string // the node of the last lookup, until its allocs are read
}

func (v *cacheView) NodeAllocsVersion(id string) (any, error) {
	v.tally.lookups++
	v.last = id
	return v.SchedulerView.NodeAllocsVersion(id)
}

func (v *cacheView) AllocsByNode(id string) ([]*api.Allocation, error) {
	if id == v.last {
		v.tally.misses++
		v.last = ""
	}
	return v.SchedulerView.AllocsByNode(id)
}

var _ VersionedState = (*cacheView)(nil)

func newUsageWorld(t *testing.T, seed uint64) *usageWorld {
	w := &usageWorld{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0xcac4e)), st: state.NewStateStore(),
		now: testNow, cache: NewUsageCache(), blocked: map[string]*api.Evaluation{}}
	for i, n := 0, 3+w.rng.IntN(5); i < n; i++ {
		var node *api.Node
		switch w.rng.IntN(4) {
		case 0:
			node = dgxLike(fmt.Sprintf("g%d", i))
		case 1:
			node = pcieLike(fmt.Sprintf("g%d", i))
		default:
			node = testNode(fmt.Sprintf("c%d", i), "dc1", int64(2000+1000*w.rng.IntN(3)), 8192)
		}
		w.write(func(tx *state.Txn) error { return tx.UpsertNode(node) })
		w.nodes = append(w.nodes, node.ID)
	}
	return w
}

// write commits fn at the next index.
func (w *usageWorld) write(fn func(*state.Txn) error) {
	w.t.Helper()
	w.index++
	if err := w.st.Write(w.index, fn); err != nil {
		w.t.Fatalf("seed %d: write at %d: %v", w.seed, w.index, err)
	}
}

func (w *usageWorld) snapshot() *state.Snapshot {
	w.t.Helper()
	snap, err := w.st.Snapshot()
	if err != nil {
		w.t.Fatal(err)
	}
	return snap
}

// randomJob: batch or service (now and then system), CPU only, whole
// GPUs or shares of GPUs (a fraction in either mode, or memory).
func (w *usageWorld) randomJob(id string) *api.Job {
	r := w.rng
	typ := []string{api.JobTypeBatch, api.JobTypeService}[r.IntN(2)]
	j := testJob(id, typ, 1+r.IntN(4), 200+100*r.IntN(10), 256+256*r.IntN(6))
	j.Datacenters = []string{"dc1"}
	j.Priority = 20 + 10*r.IntN(7)
	res := j.TaskGroups[0].Tasks[0].Resources
	switch k := r.IntN(10); {
	case k < 3:
		res.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(1 << r.IntN(3))}}
	case k < 6:
		sh := &api.DeviceShare{Fraction: []float64{0.25, 0.5}[r.IntN(2)]}
		switch r.IntN(3) {
		case 0:
			sh.Mode = api.ShareModeMPS
		case 1:
			sh = &api.DeviceShare{MemoryMB: int64(10240 * (1 + r.IntN(2)))}
		}
		res.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 1, Share: sh}}
	case k == 6:
		j.Type = api.JobTypeSystem
		j.TaskGroups[0].Count = 1
	}
	return j
}

// liveAllocs returns the non-terminal allocs, of nodeID only when set.
func (w *usageWorld) liveAllocs(nodeID string) []*api.Allocation {
	w.t.Helper()
	snap := w.snapshot()
	var all []*api.Allocation
	var err error
	if nodeID != "" {
		all, err = snap.AllocsByNode(nil, nodeID)
	} else {
		all, err = snap.Allocs(nil, "*", "")
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return slices.DeleteFunc(all, func(a *api.Allocation) bool { return a.TerminalStatus() })
}

// jobsOf returns the distinct jobs of allocs, in order.
func jobsOf(allocs []*api.Allocation) []string {
	var out []string
	for _, a := range allocs {
		if !slices.Contains(out, a.JobID) {
			out = append(out, a.JobID)
		}
	}
	return out
}

// step applies one random event and schedules the evals it calls for,
// and evals of two random jobs (passes over nodes nothing changed on).
func (w *usageWorld) step() {
	r := w.rng
	w.now = w.now.Add(time.Minute)
	trigger := api.EvalTriggerJobRegister
	var eval []string
	switch k := r.IntN(100); {
	case k < 25 || len(w.jobs) == 0:
		id := fmt.Sprintf("j%02d", len(w.jobs))
		j := w.randomJob(id)
		w.write(func(tx *state.Txn) error { return tx.UpsertJob(j) })
		w.jobs = append(w.jobs, id)
		eval = []string{id}
	case k < 45: // scale up or down, or new resources (a destructive update)
		j := w.job(w.jobs[r.IntN(len(w.jobs))])
		if j.Stop || j.Type == api.JobTypeSystem {
			break
		}
		c := j.Copy()
		if r.IntN(4) == 0 {
			c.TaskGroups[0].Tasks[0].Resources.CPU += 100
		} else {
			c.TaskGroups[0].Count = r.IntN(6)
		}
		w.write(func(tx *state.Txn) error { return tx.UpsertJob(c) })
		eval, trigger = []string{j.ID}, api.EvalTriggerJobScaling
	case k < 52:
		id := w.jobs[r.IntN(len(w.jobs))]
		w.write(func(tx *state.Txn) error { return tx.StopJob(api.DefaultNamespace, id, w.now.UnixNano()) })
		eval, trigger = []string{id}, api.EvalTriggerJobDeregister
	case k < 72: // clients report: mostly running, some complete or failed
		live := w.liveAllocs("")
		var ups []*api.Allocation
		for i := 0; i < 3 && len(live) > 0; i++ {
			a := live[r.IntN(len(live))]
			st := api.AllocClientStatusRunning
			switch r.IntN(5) {
			case 0:
				st = api.AllocClientStatusComplete
			case 1:
				st = api.AllocClientStatusFailed
			}
			ups = append(ups, &api.Allocation{ID: a.ID, ClientStatus: st, ModifyTime: w.now.UnixNano()})
			eval = append(eval, a.JobID)
		}
		w.write(func(tx *state.Txn) error { return tx.UpdateAllocsFromClient(ups) })
		trigger = api.EvalTriggerRetryFailedAlloc
	case k < 78: // drain (the drainer marks the allocs to migrate) or end a drain
		id := w.nodes[r.IntN(len(w.nodes))]
		live := w.liveAllocs(id)
		if w.node(id).Drain {
			w.write(func(tx *state.Txn) error { return tx.UpdateNodeDrain(id, nil, true, nil) })
		} else {
			yes := true
			migrate := map[string]*api.DesiredTransition{}
			for _, a := range live {
				migrate[a.ID] = &api.DesiredTransition{Migrate: &yes}
			}
			w.write(func(tx *state.Txn) error {
				if err := tx.UpdateNodeDrain(id, &api.DrainStrategy{StartedAt: w.now}, false, nil); err != nil {
					return err
				}
				return tx.UpdateAllocsDesiredTransitions(migrate)
			})
		}
		eval, trigger = jobsOf(live), api.EvalTriggerNodeDrain
	case k < 84:
		id := w.nodes[r.IntN(len(w.nodes))]
		n := w.node(id)
		if n.Drain {
			break
		}
		el := api.NodeSchedulingIneligible
		if n.SchedulingEligibility == api.NodeSchedulingIneligible {
			el = api.NodeSchedulingEligible
		}
		w.write(func(tx *state.Txn) error { return tx.UpdateNodeEligibility(id, el, nil) })
		eval, trigger = jobsOf(w.liveAllocs(id)), api.EvalTriggerNodeUpdate
	case k < 92: // the client registers again: a GPU's health flips, its reserved CPU and memory change, or its meta
		id := w.nodes[r.IntN(len(w.nodes))]
		n := w.node(id).Copy()
		switch devs := n.NodeResources.Devices; {
		case len(devs) > 0 && r.IntN(3) == 0:
			in := devs[0].Instances[r.IntN(len(devs[0].Instances))]
			in.Healthy = !in.Healthy
		case r.IntN(2) == 0:
			if n.ReservedResources == nil {
				n.ReservedResources = &api.NodeReservedResources{Cpu: api.NodeCpuResources{CpuShares: 500},
					Memory: api.NodeMemoryResources{MemoryMB: 1024}}
			} else {
				n.ReservedResources = nil
			}
		default:
			n.Meta = map[string]string{"rack": fmt.Sprint(r.IntN(3))}
		}
		w.write(func(tx *state.Txn) error { return tx.UpsertNode(n) })
		eval, trigger = jobsOf(w.liveAllocs(id)), api.EvalTriggerNodeUpdate
	default: // the node goes down (its allocs are lost) or comes back
		id := w.nodes[r.IntN(len(w.nodes))]
		status := api.NodeStatusDown
		if w.node(id).Status == api.NodeStatusDown {
			status = api.NodeStatusReady
		}
		w.write(func(tx *state.Txn) error { return tx.UpdateNodeStatus(id, status, w.now.UnixNano(), nil) })
		eval, trigger = jobsOf(w.liveAllocs(id)), api.EvalTriggerNodeUpdate
	}
	for i := 0; i < 2 && len(w.jobs) > 0; i++ {
		eval = append(eval, w.jobs[r.IntN(len(w.jobs))])
	}
	done := map[string]bool{}
	for _, id := range eval {
		if !done[id] {
			done[id] = true
			w.schedule(id, trigger)
		}
	}
}

func (w *usageWorld) job(id string) *api.Job {
	w.t.Helper()
	j, err := w.st.JobByID(nil, api.DefaultNamespace, id)
	if err != nil || j == nil {
		w.t.Fatalf("seed %d: job %s: %v %v", w.seed, id, j, err)
	}
	return j
}

func (w *usageWorld) node(id string) *api.Node {
	w.t.Helper()
	n, err := w.st.NodeByID(nil, id)
	if err != nil || n == nil {
		w.t.Fatalf("seed %d: node %s: %v %v", w.seed, id, n, err)
	}
	return n
}

// schedule runs one eval of the job (its blocked eval when it has one)
// with and without the cache on one snapshot, asserts the results are
// the same, and commits the cached pass's plan and evals.
func (w *usageWorld) schedule(jobID, trigger string) {
	t := w.t
	t.Helper()
	job := w.job(jobID)
	w.tally.evals++
	ev := &api.Evaluation{ID: fmt.Sprintf("eval-%d-%d", w.seed, w.tally.evals), Namespace: api.DefaultNamespace, JobID: jobID,
		Priority: job.Priority, Type: job.Type, TriggeredBy: trigger, Status: api.EvalStatusPending}
	if b := w.blocked[jobID]; b != nil {
		ev = b.Copy()
	}
	var res *Result
	var snap *state.Snapshot
	for attempt := 1; ; attempt++ {
		snap = w.snapshot()
		pass := func(st State, usage *UsageCache) (*Result, string) {
			t.Helper()
			res, err := Schedule(st, ev.Copy(), Options{Now: w.now, Usage: usage})
			if err != nil {
				t.Fatalf("seed %d: schedule %s: %v", w.seed, jobID, err)
			}
			return res, renderResult(t, res)
		}
		_, want := pass(snap.Scheduler(), nil)
		var got string
		res, got = pass(&cacheView{SchedulerView: snap.Scheduler(), tally: &w.tally}, w.cache)
		if got != want {
			_, again := pass(snap.Scheduler(), nil)
			t.Fatalf("seed %d eval %s attempt %d (%s, %s): the pass with the usage cache differs from the one without (a pass without it again is the same: %v) (-without +with):\n%s",
				w.seed, ev.ID, attempt, jobID, trigger, again == want, cmp.Diff(want, got))
		}
		// Now and then the applier turns the plan down (a node that
		// does not fit, a lost leadership): nothing is committed and the
		// worker tries again, on the same state.
		if attempt > 1 || res.Plan.IsNoOp() || w.rng.IntN(6) != 0 {
			break
		}
		w.tally.retries++
	}
	p := res.Plan
	w.tally.count(snap, p)
	req := &state.ApplyPlanResultsRequest{EvalID: p.EvalID, Job: p.Job, Deployment: p.Deployment,
		DeploymentUpdates: p.DeploymentUpdates, Evals: []*api.Evaluation{res.Eval}}
	for _, node := range sortedNodeKeys(p.NodeAllocation) {
		req.AllocsPlaced = append(req.AllocsPlaced, p.NodeAllocation[node]...)
	}
	for _, node := range sortedNodeKeys(p.NodeUpdate) {
		req.AllocsStopped = append(req.AllocsStopped, p.NodeUpdate[node]...)
	}
	for _, node := range sortedNodeKeys(p.NodePreemptions) {
		req.AllocsPreempted = append(req.AllocsPreempted, p.NodePreemptions[node]...)
	}
	delete(w.blocked, jobID)
	if res.Blocked != nil {
		req.Evals = append(req.Evals, res.Blocked)
		w.blocked[jobID] = res.Blocked
	}
	// Through JSON, as through Raft: the store owns what it is given, and
	// shares nothing with the plan.
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var committed state.ApplyPlanResultsRequest
	if err := json.Unmarshal(b, &committed); err != nil {
		t.Fatal(err)
	}
	w.write(func(tx *state.Txn) error { return tx.UpsertPlanResults(&committed) })
}

// renderResult is a canonical rendering of what a pass returns: the plan
// (placements with their nodes, devices and shares; stops; evictions;
// in-place updates; the deployment), the eval with its failed groups'
// metrics, the blocked eval and the follow-ups. JSON sorts map keys; the
// lists are in the pass's deterministic order.
func renderResult(t *testing.T, res *Result) string {
	t.Helper()
	s, err := resultJSON(res)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func resultJSON(res *Result) (string, error) {
	b, err := json.MarshalIndent(struct {
		Plan      *api.Plan
		Eval      *api.Evaluation
		Blocked   *api.Evaluation
		FollowUps []*api.Evaluation
	}{res.Plan, res.Eval, res.Blocked, res.FollowUps}, "", " ")
	return string(b), err
}

// A UsageCache kept across passes changes no pass: over random sequences
// of job registrations (CPU only, whole GPUs, GPU shares), scalings,
// updates, stops, client status reports, drains, eligibility changes,
// node re-registrations and nodes going down and up, on the real state
// store, every eval scheduled with the cache returns exactly what it
// returns without one; and the cache is hit.
func TestUsageCacheSameAsNoCache(t *testing.T) {
	seeds, steps := uint64(50), 30
	if testing.Short() {
		seeds = 10
	}
	var all usageTally
	for seed := range seeds {
		w := newUsageWorld(t, seed)
		for range steps {
			w.step()
		}
		all.add(w.tally)
	}
	t.Logf("%+v", all)
	// The sequences must do something worth comparing, and the passes
	// with the cache must use it.
	if all.plans < all.evals/5 {
		t.Errorf("%d of %d evals changed anything, want at least a fifth", all.plans, all.evals)
	}
	for what, n := range map[string]int{"whole GPU placements": all.wholeGPUs, "GPU share placements": all.shares,
		"in-place updates": all.inPlace, "stops": all.stops, "evictions": all.evictions, "retried plans": all.retries} {
		if n == 0 {
			t.Errorf("the plans made no %s", what)
		}
	}
	if hits := all.lookups - all.misses; hits < all.lookups/5 {
		t.Errorf("%d of %d cache lookups hit, want at least a fifth", hits, all.lookups)
	}
}

// Passes sharing one cache at once (the server's workers) each return
// what they return alone without it. Run with -race, this also checks
// that they share the cache's entries read-only.
func TestUsageCacheConcurrentPasses(t *testing.T) {
	w := newUsageWorld(t, 7)
	for range 20 {
		w.step()
	}
	// New jobs, none scheduled yet: every pass below places.
	var evs []*api.Evaluation
	for i := range 8 {
		j := w.randomJob(fmt.Sprintf("new%d", i))
		w.write(func(tx *state.Txn) error { return tx.UpsertJob(j) })
		evs = append(evs, &api.Evaluation{ID: fmt.Sprintf("eval-new-%d", i), Namespace: api.DefaultNamespace, JobID: j.ID,
			Priority: j.Priority, Type: j.Type, TriggeredBy: api.EvalTriggerJobRegister, Status: api.EvalStatusPending})
	}
	snap := w.snapshot()
	want := make([]string, len(evs))
	for i, ev := range evs {
		res, err := Schedule(snap.Scheduler(), ev.Copy(), Options{Now: w.now})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = renderResult(t, res)
	}
	cache := NewUsageCache()
	const workers = 4
	var got [workers][]string
	var errs [workers]error
	var wg sync.WaitGroup
	for g := range workers {
		got[g] = make([]string, len(evs))
		wg.Go(func() {
			for i := range evs {
				k := (i + 3*g) % len(evs)
				res, err := Schedule(snap.Scheduler(), evs[k].Copy(), Options{Now: w.now, Usage: cache})
				if err == nil {
					got[g][k], err = resultJSON(res)
				}
				if err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for g := range workers {
		if errs[g] != nil {
			t.Fatalf("worker %d: %v", g, errs[g])
		}
		for i := range evs {
			if got[g][i] != want[i] {
				t.Errorf("worker %d, eval %s: the pass with the shared cache differs from the one alone without it (-without +with):\n%s",
					g, evs[i].ID, cmp.Diff(want[i], got[g][i]))
			}
		}
	}
	if len(cache.m) == 0 {
		t.Error("the cache holds no entry")
	}
}

var errStateRead = errors.New("state read failed")

// versionFails is a VersionedState whose version reads fail.
type versionFails struct{ *memState }

func (versionFails) NodeAllocsVersion(string) (any, error) { return nil, errStateRead }

// allocReadFails is a VersionedState whose node alloc reads fail.
type allocReadFails struct{ *memState }

func (allocReadFails) NodeAllocsVersion(id string) (any, error) { return id, nil }
func (allocReadFails) AllocsByNode(string) ([]*api.Allocation, error) {
	return nil, errStateRead
}

// A state read that fails in a pass with the cache fails the pass with
// the read's error, as it does without the cache (the node is not left
// without usage for the pass to stumble on).
func TestUsageCacheReadError(t *testing.T) {
	for _, tt := range []struct {
		name string
		st   func(*memState) VersionedState
	}{
		{"version", func(m *memState) VersionedState { return versionFails{m} }},
		{"allocs", func(m *memState) VersionedState { return allocReadFails{m} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := smallCluster()
			job := testJob("web", api.JobTypeService, 2, 500, 256)
			st.upsertJob(job)
			_, err := Schedule(tt.st(st), testEval(job, 1), Options{Now: testNow, Usage: NewUsageCache()})
			if !errors.Is(err, errStateRead) {
				t.Fatalf("got error %v, want %v", err, errStateRead)
			}
		})
	}
}
