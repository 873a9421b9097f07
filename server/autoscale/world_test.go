package autoscale

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/server/scheduler"
	"github.com/drover/drover/server/state"
)

// world is a cluster simulated at the scheduler level for the tests: the
// real state store and scheduler, the sim provider on a fake clock, and a
// client that does at once what it is told (stopped allocs report
// complete). It is the Cluster the Scaler drives.
type world struct {
	t       testing.TB
	st      *state.StateStore
	idx     uint64
	clk     *clock.Fake
	sim     *Sim
	pending map[string]*api.Evaluation // job ID -> the eval waiting for capacity
	seq     int
	// drains records every Drain call: node ID -> reason.
	drains map[string]string
	// stopped counts allocs stopped by drains, replaced is how many of
	// them got a replacement placed.
	stopped map[string]string // alloc ID -> job ID, until replaced
}

var _ Cluster = (*world)(nil)

func newWorld(t testing.TB, boot time.Duration) *world {
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	return &world{t: t, st: state.NewStateStore(), clk: clk, sim: NewSim(clk, boot), pending: map[string]*api.Evaluation{},
		drains: map[string]string{}, stopped: map[string]string{}}
}

func (w *world) next() uint64 { w.idx++; return w.idx }

func (w *world) State() (scheduler.State, []*api.Evaluation, error) {
	snap, err := w.st.Snapshot()
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, 0, len(w.pending))
	for id := range w.pending {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]*api.Evaluation, 0, len(ids))
	for _, id := range ids {
		out = append(out, w.pending[id])
	}
	return snap.Scheduler(), out, nil
}

// Drain marks the node's allocs to migrate, as the drainer does at its
// deadline, and schedules their jobs again; the scheduler stops and
// replaces them (settle), the client reports the stopped ones complete,
// and the drain completes once none is left.
func (w *world) Drain(_ context.Context, nodeID string, deadline time.Duration, reason string) error {
	w.drains[nodeID] = reason
	ds := &api.DrainStrategy{DrainSpec: api.DrainSpec{Deadline: deadline, Reason: reason}, StartedAt: w.clk.Now()}
	if err := w.st.UpdateNodeDrain(w.next(), nodeID, ds, false, nil); err != nil {
		return err
	}
	allocs, err := w.st.AllocsByNode(nil, nodeID)
	if err != nil {
		return err
	}
	migrate := map[string]*api.DesiredTransition{}
	jobs := map[string]bool{}
	for _, a := range allocs {
		if a.ClientTerminalStatus() || a.DesiredStatus != api.AllocDesiredStatusRun {
			continue
		}
		t := true
		migrate[a.ID] = &api.DesiredTransition{Migrate: &t}
		jobs[a.JobID] = true
		if reason == ReasonScaleIn {
			w.stopped[a.ID] = a.JobID
		}
	}
	if err := w.st.UpdateAllocsDesiredTransitions(w.next(), migrate, nil); err != nil {
		return err
	}
	for id := range jobs {
		w.enqueue(id)
	}
	return nil
}

func (w *world) Remove(_ context.Context, nodeID string) error {
	return w.st.DeleteNode(w.next(), []string{nodeID})
}

func (w *world) enqueue(jobID string) {
	j, err := w.st.JobByID(nil, api.DefaultNamespace, jobID)
	if err != nil || j == nil {
		return
	}
	w.seq++
	w.pending[jobID] = &api.Evaluation{ID: fmt.Sprintf("00000000-0000-4000-9000-%012d", w.seq), Namespace: j.Namespace, JobID: j.ID,
		Type: j.Type, Priority: j.Priority, TriggeredBy: api.EvalTriggerJobRegister, Status: api.EvalStatusBlocked,
		CreateTime: w.clk.Now().UnixNano()}
}

// submit registers a job; it is scheduled by the next settle.
func (w *world) submit(j *api.Job) {
	if j.Namespace == "" {
		j.Namespace = api.DefaultNamespace
	}
	j.SubmitTime = w.clk.Now().UnixNano()
	if err := w.st.UpsertJob(w.next(), j); err != nil {
		w.t.Fatal(err)
	}
	w.enqueue(j.ID)
}

// finish stops a job: its allocs complete.
func (w *world) finish(jobID string) {
	j, err := w.st.JobByID(nil, api.DefaultNamespace, jobID)
	if err != nil || j == nil {
		return
	}
	allocs, err := w.st.AllocsByJob(nil, api.DefaultNamespace, jobID, true)
	if err != nil {
		w.t.Fatal(err)
	}
	var stop []*api.Allocation
	for _, a := range allocs {
		if !a.ClientTerminalStatus() {
			cp := a.Copy()
			cp.DesiredStatus, cp.ClientStatus = api.AllocDesiredStatusStop, api.AllocClientStatusComplete
			stop = append(stop, cp)
		}
	}
	cp := j.Copy()
	cp.Stop = true
	if err := w.st.UpsertJob(w.next(), cp); err != nil {
		w.t.Fatal(err)
	}
	if len(stop) > 0 {
		if err := w.st.UpsertAllocs(w.next(), stop); err != nil {
			w.t.Fatal(err)
		}
		if err := w.st.UpdateAllocsFromClient(w.next(), completed(stop)); err != nil {
			w.t.Fatal(err)
		}
	}
	delete(w.pending, jobID)
}

// boot registers the sim nodes that finished booting.
func (w *world) boot() {
	for _, n := range w.sim.Due() {
		if err := w.st.UpsertNode(w.next(), n); err != nil {
			w.t.Fatal(err)
		}
	}
}

// settle schedules every pending eval once, committing the plans (the
// scheduler is the only writer, so no plan needs the applier's check).
func (w *world) settle() {
	_, evals, err := w.State()
	if err != nil {
		w.t.Fatal(err)
	}
	for _, e := range evals {
		snap, err := w.st.Snapshot()
		if err != nil {
			w.t.Fatal(err)
		}
		ev := *e
		ev.Status = api.EvalStatusPending
		out, err := scheduler.Schedule(snap.Scheduler(), &ev, scheduler.Options{Now: w.clk.Now()})
		if err != nil {
			w.t.Fatal(err)
		}
		req := &state.ApplyPlanResultsRequest{Job: out.Plan.Job, EvalID: ev.ID}
		for _, list := range out.Plan.NodeAllocation {
			for _, a := range list {
				req.AllocsPlaced = append(req.AllocsPlaced, a)
				if a.PreviousAllocation != "" {
					delete(w.stopped, a.PreviousAllocation)
				}
			}
		}
		for _, list := range out.Plan.NodeUpdate {
			req.AllocsStopped = append(req.AllocsStopped, list...)
		}
		if !req.Empty() {
			if err := w.st.UpsertPlanResults(w.next(), req); err != nil {
				w.t.Fatal(err)
			}
		}
		if len(req.AllocsStopped) > 0 {
			if err := w.st.UpdateAllocsFromClient(w.next(), completed(req.AllocsStopped)); err != nil {
				w.t.Fatal(err)
			}
		}
		if len(out.Eval.FailedTGAllocs) == 0 && out.Blocked == nil {
			delete(w.pending, e.JobID)
		}
	}
	w.drainsDone()
}

// drainsDone completes the drains of nodes with nothing left running.
func (w *world) drainsDone() {
	nodes, err := w.st.Nodes(nil, "")
	if err != nil {
		w.t.Fatal(err)
	}
	for _, n := range nodes {
		if n.DrainStrategy == nil {
			continue
		}
		allocs, err := w.st.AllocsByNode(nil, n.ID)
		if err != nil {
			w.t.Fatal(err)
		}
		busy := false
		for _, a := range allocs {
			busy = busy || !a.ClientTerminalStatus()
		}
		if !busy {
			if err := w.st.UpdateNodeDrain(w.next(), n.ID, nil, false, nil); err != nil {
				w.t.Fatal(err)
			}
		}
	}
}

// liveAllocs are a job's allocs not terminal on the client.
func (w *world) liveAllocs(jobID string) []*api.Allocation {
	all, err := w.st.AllocsByJob(nil, api.DefaultNamespace, jobID, true)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []*api.Allocation
	for _, a := range all {
		if !a.ClientTerminalStatus() && a.DesiredStatus == api.AllocDesiredStatusRun {
			out = append(out, a)
		}
	}
	return out
}

// gpuJob is a batch job of count allocs of gpus GPUs each; a gang when
// gang is set.
func gpuJob(id string, count, gpus int, gang bool, queue string) *api.Job {
	res := &api.Resources{CPU: 500, MemoryMB: 256}
	if gpus > 0 {
		res.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(gpus)}}
	}
	tg := &api.TaskGroup{Name: "g", Count: count,
		Tasks: []*api.Task{{Name: "t", Driver: "exec", Config: map[string]any{"command": "/bin/true"}, Resources: res}}}
	if gang {
		tg.Gang = &api.Gang{}
	}
	return &api.Job{ID: id, Type: api.JobTypeBatch, Datacenters: []string{"dc1"}, Priority: 50, Queue: queue,
		NodePool: "gpu", TaskGroups: []*api.TaskGroup{tg}}
}

func gpuPolicy(min, max int, strategy string) Policy {
	p := Policy{Pool: "gpu", Min: min, Max: max, Provider: "sim", Cooldown: time.Minute,
		Shape:   Shape{GPUModel: "H100", GPUs: 8, CPU: 96000, MemoryMB: 393216, Spot: true, Price: 24},
		ScaleIn: ScaleInPolicy{Strategy: strategy, Idle: 10 * time.Minute}}
	if err := p.Validate(); err != nil {
		panic(err)
	}
	return p
}

func (w *world) scaler(pols ...Policy) *Scaler {
	return &Scaler{Policies: pols, Providers: map[string]Provider{"sim": w.sim}, Cluster: w, Clock: w.clk,
		Options: func() scheduler.Options { return scheduler.Options{Now: w.clk.Now()} }}
}

// completed are client updates reporting the allocs complete (UpsertAllocs
// keeps client fields, and owns what it is given).
func completed(allocs []*api.Allocation) []*api.Allocation {
	out := make([]*api.Allocation, len(allocs))
	for i, a := range allocs {
		out[i] = &api.Allocation{ID: a.ID, ClientStatus: api.AllocClientStatusComplete}
	}
	return out
}
