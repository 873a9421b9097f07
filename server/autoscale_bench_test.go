package server

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/server/autoscale"
	"github.com/drover/drover/server/scheduler"
	"github.com/drover/drover/server/state"
)

// The elastic-capacity replay (issue 45's bench): the OpenB pod list with
// its creation and deletion times, on a virtual clock, through the real
// scheduler, state store and plan evaluation, and the real autoscaler
// (autoscale.Scaler with the sim provider), on a cluster that starts
// empty; against a static cluster of the autoscaled run's peak size. A
// pod runs for deletion - creation once placed (pending delays its end).
// One node shape: the trace's G3 node (8 GPUs, 128 cores, 768 GiB: every
// pod fits one), so the pods' GPU model lists are left out. The virtual
// clock makes the replay's cost independent of the trace's span (the
// time compression is total).

// traceBoot is the sim provider's boot delay, in trace time.
const traceBoot = 60 * time.Second

// elasticShape is the node of the replay (the trace's G3 node), priced
// per node-hour (8 GPUs at 2.5 per GPU-hour).
var elasticShape = autoscale.Shape{GPUModel: "G3", GPUs: 8, CPU: 128000, MemoryMB: 786432, Price: 20}

// tracePod is one pod of the list with its times.
type tracePod struct {
	openbPod
	created, duration time.Duration
}

func (p tracePod) gpus() float64 { return float64(p.gpuReq()) / 1000 }

func loadTracePods(tb testing.TB, path string) []tracePod {
	rows, err := readCSV(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out []tracePod
	for i, row := range rows {
		cpu, err1 := csvInt(row, "cpu_milli")
		mem, err2 := csvInt(row, "memory_mib")
		n, err3 := csvInt(row, "num_gpu")
		milli, err4 := csvInt(row, "gpu_milli")
		c, err5 := csvInt(row, "creation_time")
		d, err6 := csvInt(row, "deletion_time")
		if err := firstErr(err1, err2, err3, err4, err5, err6); err != nil {
			tb.Fatalf("%s line %d: %v", path, i+2, err)
		}
		p := openbPod{cpu: cpu, memMiB: mem, numGPU: int(n), milli: int(milli)}
		if p.numGPU == 0 {
			p.milli = 0
		}
		out = append(out, tracePod{openbPod: p, created: time.Duration(c) * time.Second, duration: time.Duration(max(d-c, 1)) * time.Second})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].created < out[j].created })
	return out
}

// elasticResult is one replay's figures.
type elasticResult struct {
	nodeHours, gpuHoursPaid, cost, gpuHoursUsed float64
	p50, p95, pmax                              time.Duration // pending time of GPU pods
	waited                                      int           // GPU pods that waited at all
	peakNodes                                   int
	gangsPartial, lost, unplaced                int
	passes                                      int
	elapsed                                     time.Duration
}

// endEvent is a placed pod's end.
type endEvent struct {
	at  time.Time
	job string
}

type endHeap []endEvent

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(endEvent)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// elasticSim is the replay's cluster: the autoscale.Cluster the scaler
// drives and the client that does what it is told.
type elasticSim struct {
	tb      testing.TB
	st      *state.StateStore
	idx     uint64
	clk     *clock.Fake
	pending map[string]*api.Evaluation
	order   []string // pending job IDs in arrival order
	seq     int
	ends    endHeap
	pods    map[string]tracePod
	placed  map[string]time.Time
	res     *elasticResult
}

func (s *elasticSim) next() uint64 { s.idx++; return s.idx }

func (s *elasticSim) State() (scheduler.State, []*api.Evaluation, error) {
	snap, err := s.st.Snapshot()
	if err != nil {
		return nil, nil, err
	}
	out := make([]*api.Evaluation, 0, len(s.pending))
	for _, id := range s.order {
		if e := s.pending[id]; e != nil {
			out = append(out, e)
		}
	}
	return snap.Scheduler(), out, nil
}

// Drain: the scaler picks empty nodes (strategy "empty") here, so the
// drain completes at once; anything found running would be lost work.
func (s *elasticSim) Drain(_ context.Context, nodeID string, deadline time.Duration, reason string) error {
	allocs, err := s.st.AllocsByNode(nil, nodeID)
	if err != nil {
		return err
	}
	for _, a := range allocs {
		if !a.ClientTerminalStatus() {
			s.res.lost++
		}
	}
	ds := &api.DrainStrategy{DrainSpec: api.DrainSpec{Deadline: deadline, Reason: reason}, StartedAt: s.clk.Now()}
	return s.st.UpdateNodeDrain(s.next(), nodeID, ds, false, nil)
}

func (s *elasticSim) Remove(_ context.Context, nodeID string) error {
	allocs, err := s.st.AllocsByNode(nil, nodeID)
	if err != nil {
		return err
	}
	for _, a := range allocs {
		if !a.ClientTerminalStatus() {
			s.res.lost++
		}
	}
	return s.st.DeleteNode(s.next(), []string{nodeID})
}

func (s *elasticSim) submit(id string, p tracePod) {
	job := openbJob(0, p.openbPod)
	job.ID = id
	if len(job.TaskGroups[0].Tasks[0].Resources.Devices) > 0 {
		job.TaskGroups[0].Tasks[0].Resources.Devices[0].Constraints = nil // one node model
	}
	job.SubmitTime = s.clk.Now().UnixNano()
	if err := s.st.UpsertJob(s.next(), job); err != nil {
		s.tb.Fatal(err)
	}
	s.seq++
	s.pending[id] = &api.Evaluation{ID: fmt.Sprintf("00000000-0000-4000-9000-%012d", s.seq), Namespace: job.Namespace, JobID: id,
		Type: job.Type, Priority: job.Priority, TriggeredBy: api.EvalTriggerJobRegister, Status: api.EvalStatusBlocked,
		CreateTime: s.clk.Now().UnixNano()}
	s.order = append(s.order, id)
}

// settle schedules the pending pods in arrival order through the real
// scheduler and plan evaluation.
func (s *elasticSim) settle() {
	var keep []string
	for _, id := range s.order {
		e := s.pending[id]
		if e == nil {
			continue
		}
		snap, err := s.st.Snapshot()
		if err != nil {
			s.tb.Fatal(err)
		}
		ev := *e
		ev.Status = api.EvalStatusPending
		out, err := scheduler.Schedule(snap.Scheduler(), &ev, scheduler.Options{Now: s.clk.Now()})
		if err != nil {
			s.tb.Fatal(err)
		}
		placed := false
		if len(out.Plan.NodeAllocation) > 0 {
			_, req, err := evaluatePlan(snap, out.Plan)
			if err != nil {
				s.tb.Fatal(err)
			}
			// A gang is committed whole or not at all: count any that
			// the evaluation kept in part.
			kept := map[string]bool{}
			for _, a := range req.AllocsPlaced {
				kept[a.ID] = true
			}
			for _, g := range out.Plan.Gangs {
				n := 0
				for _, id := range g.AllocIDs {
					if kept[id] {
						n++
					}
				}
				if n > 0 && n < len(g.AllocIDs) {
					s.res.gangsPartial++
				}
			}
			if err := s.st.UpsertPlanResults(s.next(), req); err != nil {
				s.tb.Fatal(err)
			}
			placed = len(req.AllocsPlaced) > 0
		}
		if !placed {
			keep = append(keep, id)
			continue
		}
		delete(s.pending, id)
		now := s.clk.Now()
		s.placed[id] = now
		heap.Push(&s.ends, endEvent{at: now.Add(s.pods[id].duration), job: id})
	}
	s.order = keep
}

// end completes a pod: its alloc reports complete.
func (s *elasticSim) end(id string) {
	allocs, err := s.st.AllocsByJob(nil, api.DefaultNamespace, id, true)
	if err != nil {
		s.tb.Fatal(err)
	}
	var done []*api.Allocation
	for _, a := range allocs {
		if !a.ClientTerminalStatus() {
			done = append(done, &api.Allocation{ID: a.ID, ClientStatus: api.AllocClientStatusComplete})
		}
	}
	if err := s.st.UpdateAllocsFromClient(s.next(), done); err != nil {
		s.tb.Fatal(err)
	}
	p := s.pods[id]
	s.res.gpuHoursUsed += p.gpus() * s.clk.Now().Sub(s.placed[id]).Hours()
}

// replayElastic runs the trace on an autoscaled cluster (static = 0) or on
// a static one of that many nodes.
func replayElastic(tb testing.TB, pods []tracePod, static int) elasticResult {
	start := time.Now()
	t0 := time.Unix(1_800_000_000, 0)
	clk := clock.NewFake(t0)
	res := elasticResult{}
	s := &elasticSim{tb: tb, st: state.NewStateStore(), clk: clk, pending: map[string]*api.Evaluation{}, pods: map[string]tracePod{},
		placed: map[string]time.Time{}, res: &res}
	sim := autoscale.NewSim(clk, traceBoot)
	pol := autoscale.Policy{Pool: api.DefaultNodePool, Min: 0, Max: 256, Provider: "sim", Shape: elasticShape, Cooldown: time.Minute,
		ScaleIn: autoscale.ScaleInPolicy{Strategy: autoscale.StrategyEmpty, Idle: 10 * time.Minute}}
	if err := pol.Validate(); err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	if static > 0 {
		if _, err := sim.Create(ctx, pol.Pool, pol.Shape, static); err != nil {
			tb.Fatal(err)
		}
		clk.Advance(traceBoot)
	}
	scaler := &autoscale.Scaler{Policies: []autoscale.Policy{pol}, Providers: map[string]autoscale.Provider{"sim": sim}, Cluster: s,
		Clock: clk, Options: func() scheduler.Options { return scheduler.Options{Now: clk.Now()} }}
	boot := func() {
		for _, n := range sim.Due() {
			if err := s.st.UpsertNode(s.next(), n); err != nil {
				tb.Fatal(err)
			}
		}
	}
	const tick = 5 * time.Minute // scale-in passes between events
	i := 0
	lastTick := clk.Now()
	for i < len(pods) || s.ends.Len() > 0 || len(s.pending) > 0 {
		// The next event: an arrival, an end, a boot or a tick.
		next := time.Time{}
		consider := func(t time.Time) {
			if !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
		if i < len(pods) {
			consider(t0.Add(pods[i].created))
		}
		if s.ends.Len() > 0 {
			consider(s.ends[0].at)
		}
		consider(sim.NextBoot())
		if static == 0 {
			consider(lastTick.Add(tick))
		}
		if next.IsZero() {
			break // pending work that fits nowhere
		}
		if next.After(clk.Now()) {
			clk.Advance(next.Sub(clk.Now()))
		}
		now := clk.Now()
		for i < len(pods) && !t0.Add(pods[i].created).After(now) {
			id := fmt.Sprintf("pod-%05d", i)
			s.pods[id] = pods[i]
			s.submit(id, pods[i])
			i++
		}
		for s.ends.Len() > 0 && !s.ends[0].at.After(now) {
			s.end(heap.Pop(&s.ends).(endEvent).job)
		}
		boot()
		s.settle()
		if static == 0 {
			if _, err := scaler.Step(ctx); err != nil {
				tb.Fatal(err)
			}
			res.passes++
			lastTick = now
			boot()
			s.settle()
		}
		if list, _ := sim.List(ctx); len(list) > res.peakNodes {
			res.peakNodes = len(list)
		}
		if static > 0 && s.ends.Len() == 0 && i == len(pods) {
			break
		}
		if static == 0 && s.ends.Len() == 0 && i == len(pods) && sim.NextBoot().IsZero() {
			if list, _ := sim.List(ctx); len(list) == 0 || len(s.pending) > 0 && res.passes > 0 && now.Sub(lastTick) > time.Hour {
				break
			}
		}
	}
	res.unplaced = len(s.pending)
	res.nodeHours, res.gpuHoursPaid, res.cost = sim.Paid()
	var waits []time.Duration
	for id, at := range s.placed {
		p := s.pods[id]
		if p.numGPU > 0 {
			waits = append(waits, at.Sub(t0.Add(p.created)))
		}
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	for _, w := range waits {
		if w > 0 {
			res.waited++
		}
	}
	if len(waits) > 0 {
		res.pmax = waits[len(waits)-1]
		res.p50 = waits[len(waits)/2]
		res.p95 = waits[int(math.Ceil(float64(len(waits))*0.95))-1]
	}
	res.elapsed = time.Since(start)
	return res
}

func elasticInputs(tb testing.TB) []tracePod {
	path := "testdata/openb/openb_pod_list_default.csv"
	if p := os.Getenv("DROVER_OPENB_PODS"); p != "" {
		path = p
	}
	return loadTracePods(tb, path)
}

// BenchmarkElastic replays the OpenB pods with their times on an
// autoscaled sim cluster starting empty (boot 60 s of trace time) and on
// a static cluster of the autoscaled peak, and reports: paid-node-h and
// paid-gpu-h (autoscaled), static-gpu-h, paid-ratio-% (target <= 60),
// used-gpu-h, pending-p50-s, pending-p95-s (target <= 120, twice the
// boot delay) and pending-max-s of GPU pods, gpu-pods-waited (GPU pods
// placed later than they arrived), gangs-partial and work-lost (target
// 0).
func BenchmarkElastic(b *testing.B) {
	pods := elasticInputs(b)
	var auto, static elasticResult
	for range b.N {
		auto = replayElastic(b, pods, 0)
		static = replayElastic(b, pods, auto.peakNodes)
	}
	b.ReportMetric(auto.nodeHours, "paid-node-h")
	b.ReportMetric(auto.gpuHoursPaid, "paid-gpu-h")
	b.ReportMetric(static.gpuHoursPaid, "static-gpu-h")
	b.ReportMetric(100*auto.gpuHoursPaid/static.gpuHoursPaid, "paid-ratio-%")
	b.ReportMetric(auto.gpuHoursUsed, "used-gpu-h")
	b.ReportMetric(auto.p50.Seconds(), "pending-p50-s")
	b.ReportMetric(auto.p95.Seconds(), "pending-p95-s")
	b.ReportMetric(auto.pmax.Seconds(), "pending-max-s")
	b.ReportMetric(float64(auto.waited), "gpu-pods-waited")
	b.ReportMetric(static.p95.Seconds(), "static-p95-s")
	b.ReportMetric(float64(auto.peakNodes), "peak-nodes")
	b.ReportMetric(float64(auto.gangsPartial+static.gangsPartial), "gangs-partial")
	b.ReportMetric(float64(auto.lost+static.lost), "work-lost")
	b.ReportMetric(auto.elapsed.Seconds(), "replay-s")
}

// The replay's bookkeeping on a small trace: an empty cluster grows when
// pods arrive, pods wait about the boot delay, the nodes go after the
// work, and the static cluster of the same peak pays for the whole span.
func TestElasticReplaySmall(t *testing.T) {
	var pods []tracePod
	for i := range 20 {
		pods = append(pods, tracePod{openbPod: openbPod{cpu: 4000, memMiB: 8192, numGPU: 1 + i%4, milli: 1000},
			created: time.Duration(3*i) * time.Hour, duration: 30 * time.Minute})
	}
	auto := replayElastic(t, pods, 0)
	if auto.unplaced != 0 || auto.lost != 0 || auto.gangsPartial != 0 {
		t.Fatalf("autoscaled: %+v", auto)
	}
	if auto.p95 > 2*traceBoot {
		t.Errorf("p95 pending %v, want <= %v", auto.p95, 2*traceBoot)
	}
	static := replayElastic(t, pods, auto.peakNodes)
	if static.p95 != 0 {
		t.Errorf("static p95 pending %v, want 0", static.p95)
	}
	if auto.gpuHoursPaid >= static.gpuHoursPaid/2 {
		t.Errorf("paid %.1f GPU-h autoscaled, %.1f static: want well under half", auto.gpuHoursPaid, static.gpuHoursPaid)
	}
	if want := 20 * 2.5 * 0.5; math.Abs(auto.gpuHoursUsed-want) > 0.01 {
		t.Errorf("used %.2f GPU-h, want %.2f", auto.gpuHoursUsed, want)
	}
}
