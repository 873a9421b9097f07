package server

import (
	"encoding/csv"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/scheduler"
	"github.com/drover/drover/server/state"
)

// The OpenB replay (testdata/openb/README.md): the FGD paper's method on
// drover's real scheduler, state store and plan applier. One node per
// line of the node list; the workload is every pod of the pod list, then
// pods drawn uniformly with replacement until the next would push the
// GPU request past 1.3x the cluster's GPU capacity, shuffled with a seed,
// submitted one at a time (a batch job of one alloc), never deleted.
// After each pod: arrived = GPU request submitted so far / capacity,
// allocated = GPU request placed / capacity, in thousandths of a GPU.

// openbNode is one line of a node list.
type openbNode struct {
	name        string
	cpu, memMiB int64
	gpus        int
	model       string
}

// openbPod is one line of a pod list.
type openbPod struct {
	cpu, memMiB int64
	numGPU      int
	milli       int      // per GPU, with numGPU == 1 possibly under 1000
	models      []string // allowed models; none: any
}

// gpuReq is the pod's GPU request in thousandths of a GPU.
func (p openbPod) gpuReq() int64 { return int64(p.numGPU) * int64(p.milli) }

// readCSV reads a CSV file with a header into maps by column name.
func readCSV(path string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	var out []map[string]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		row := make(map[string]string, len(head))
		for i, h := range head {
			if i < len(rec) {
				row[h] = rec[i]
			}
		}
		out = append(out, row)
	}
}

func csvInt(row map[string]string, col string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(row[col]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("column %s = %q: %w", col, row[col], err)
	}
	return v, nil
}

func loadOpenBNodes(path string) ([]openbNode, error) {
	rows, err := readCSV(path)
	if err != nil {
		return nil, err
	}
	out := make([]openbNode, 0, len(rows))
	for i, row := range rows {
		cpu, err1 := csvInt(row, "cpu_milli")
		mem, err2 := csvInt(row, "memory_mib")
		gpus, err3 := csvInt(row, "gpu")
		if err := firstErr(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+2, err)
		}
		out = append(out, openbNode{name: row["sn"], cpu: cpu, memMiB: mem, gpus: int(gpus), model: row["model"]})
	}
	return out, nil
}

func loadOpenBPods(path string) ([]openbPod, error) {
	rows, err := readCSV(path)
	if err != nil {
		return nil, err
	}
	out := make([]openbPod, 0, len(rows))
	for i, row := range rows {
		cpu, err1 := csvInt(row, "cpu_milli")
		mem, err2 := csvInt(row, "memory_mib")
		n, err3 := csvInt(row, "num_gpu")
		milli, err4 := csvInt(row, "gpu_milli")
		if err := firstErr(err1, err2, err3, err4); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+2, err)
		}
		p := openbPod{cpu: cpu, memMiB: mem, numGPU: int(n), milli: int(milli)}
		if p.numGPU == 0 {
			p.milli = 0
		}
		if spec := strings.TrimSpace(row["gpu_spec"]); spec != "" {
			p.models = strings.Split(spec, "|")
		}
		out = append(out, p)
	}
	return out, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// openbWorkload is the paper's workload: every pod, then uniform samples
// with replacement while the total GPU request stays within 1.3x
// capacity, shuffled.
func openbWorkload(pods []openbPod, capacity int64, seed uint64) []openbPod {
	r := rand.New(rand.NewPCG(seed, 0x0be7))
	out := append([]openbPod(nil), pods...)
	var total int64
	for _, p := range out {
		total += p.gpuReq()
	}
	limit := capacity * 13 / 10
	for {
		p := pods[r.IntN(len(pods))]
		if total+p.gpuReq() > limit {
			break
		}
		total += p.gpuReq()
		out = append(out, p)
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func openbAPINode(i int, n openbNode) *api.Node {
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	node := testNode(id, n.cpu, n.memMiB)
	node.Name, node.Status, node.SchedulingEligibility = n.name, api.NodeStatusReady, api.NodeSchedulingEligible
	if n.gpus > 0 {
		d := &api.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: n.model}
		for g := 0; g < n.gpus; g++ {
			d.Instances = append(d.Instances, &api.NodeDevice{ID: fmt.Sprintf("%s-gpu%d", n.name, g), Healthy: true})
		}
		node.NodeResources.Devices = []*api.NodeDeviceResource{d}
	}
	return node
}

// openbJob is a batch job of one alloc asking what the pod asks: a
// fraction of one GPU as a share (time-slicing, the default).
func openbJob(i int, p openbPod) *api.Job {
	res := &api.Resources{CPU: int(p.cpu), MemoryMB: int(p.memMiB)}
	if p.numGPU > 0 {
		dev := &api.RequestedDevice{Name: "nvidia/gpu", Count: uint64(p.numGPU)}
		if p.milli < api.MilliPerDevice {
			dev.Share = &api.DeviceShare{Fraction: float64(p.milli) / api.MilliPerDevice}
		}
		if len(p.models) > 0 {
			dev.Constraints = []*api.Constraint{{LTarget: "${device.model}", Operand: "set_contains_any", RTarget: strings.Join(p.models, ",")}}
		}
		res.Devices = []*api.RequestedDevice{dev}
	}
	return &api.Job{ID: fmt.Sprintf("pod-%05d", i), Namespace: api.DefaultNamespace, Type: api.JobTypeBatch, Datacenters: []string{"dc1"},
		Priority: 50, TaskGroups: []*api.TaskGroup{{Name: "p", Count: 1,
			Tasks: []*api.Task{{Name: "t", Driver: "exec", Config: map[string]any{"command": "/bin/true"}, Resources: res}}}}}
}

// openbResult is one replay's figures.
type openbResult struct {
	pods                        int
	alloc90, alloc100, alloc130 float64 // allocated % when arrived first reaches 90/100% (130: at the end)
	firstFail                   float64 // arrived % at the first GPU pod that was not placed (100+ if none before 100%)
	unallocAt100                float64 // GPUs' worth of the arrived request not placed at 100%
	fragAt100                   float64 // % of idle GPU capacity fragmented for the frequent shapes, at 100%
	elapsed                     time.Duration
}

// replayOpenB runs one seed of the replay.
func replayOpenB(tb testing.TB, nodes []openbNode, pods []openbPod, seed uint64) openbResult {
	st := state.NewStateStore()
	var idx uint64
	var capacity int64
	for i, n := range nodes {
		idx++
		if err := st.UpsertNode(idx, openbAPINode(i, n)); err != nil {
			tb.Fatal(err)
		}
		capacity += int64(n.gpus) * 1000
	}
	work := openbWorkload(pods, capacity, seed)
	shapes := frequentShapes(pods)
	res := openbResult{pods: len(work), firstFail: -1}
	var arrived, allocated int64
	marks := []struct {
		at  int64
		dst *float64
	}{{capacity * 9 / 10, &res.alloc90}, {capacity, &res.alloc100}, {capacity * 13 / 10, &res.alloc130}}
	pct := func(v int64) float64 { return 100 * float64(v) / float64(capacity) }
	start := time.Now()
	now := time.Unix(1_800_000_000, 0)
	workload := scheduler.NewWorkload(0) // as the server keeps it from submissions
	usage := scheduler.NewUsageCache()   // as the server keeps it for its workers
	sample := 0
	if v, err := strconv.Atoi(os.Getenv("DROVER_OPENB_SAMPLE")); err == nil {
		sample = v
	}
	if v, err := strconv.ParseFloat(os.Getenv("DROVER_OPENB_COVER"), 64); err == nil {
		defer func(c float64) { scheduler.ShapeCoverage = c }(scheduler.ShapeCoverage)
		scheduler.ShapeCoverage = v
	}
	if v, err := strconv.ParseFloat(os.Getenv("DROVER_OPENB_SCARCE"), 64); err == nil {
		defer func(a float64) { scheduler.ScarcityExponent = a }(scheduler.ScarcityExponent)
		scheduler.ScarcityExponent = v
	}
	for i, p := range work {
		job := openbJob(i, p)
		workload.Observe(job)
		idx++
		if err := st.UpsertJob(idx, job); err != nil {
			tb.Fatal(err)
		}
		snap, err := st.Snapshot()
		if err != nil {
			tb.Fatal(err)
		}
		eval := &api.Evaluation{ID: fmt.Sprintf("00000000-0000-4000-9000-%012d", i), Namespace: job.Namespace, JobID: job.ID,
			Type: job.Type, Priority: job.Priority, TriggeredBy: api.EvalTriggerJobRegister, Status: api.EvalStatusPending}
		out, err := scheduler.Schedule(snap.Scheduler(), eval, scheduler.Options{Now: now, Workload: workload.Shapes(), Usage: usage, SampleLimit: sample})
		if err != nil {
			tb.Fatal(err)
		}
		placed := false
		if len(out.Plan.NodeAllocation) > 0 {
			_, req, err := evaluatePlan(snap, out.Plan)
			if err != nil {
				tb.Fatal(err)
			}
			idx++
			if err := st.UpsertPlanResults(idx, req); err != nil {
				tb.Fatal(err)
			}
			placed = len(req.AllocsPlaced) > 0
		}
		arrived += p.gpuReq()
		if placed {
			allocated += p.gpuReq()
		} else if p.gpuReq() > 0 && res.firstFail < 0 {
			res.firstFail = pct(arrived)
		}
		for _, m := range marks {
			if *m.dst == 0 && arrived >= m.at {
				*m.dst = pct(allocated)
				if m.at == capacity {
					res.unallocAt100 = float64(arrived-allocated) / 1000
					res.fragAt100 = fragmentation(tb, st, shapes)
				}
			}
		}
	}
	if res.firstFail < 0 {
		res.firstFail = pct(arrived)
	}
	if res.alloc130 == 0 {
		// The workload stops at the last pod within 1.3x: its end is 130%.
		res.alloc130 = pct(allocated)
	}
	res.elapsed = time.Since(start)
	return res
}

// podShape is a GPU ask: numGPU GPUs of milli thousandths each.
type podShape struct {
	numGPU, milli int
	p             float64 // share of the pods
}

// frequentShapes are the GPU shapes covering 95% of the GPU pods,
// weighted by frequency (the paper's target workload).
func frequentShapes(pods []openbPod) []podShape {
	count := map[[2]int]int{}
	n := 0
	for _, p := range pods {
		if p.numGPU > 0 {
			count[[2]int{p.numGPU, p.milli}]++
			n++
		}
	}
	var out []podShape
	for k, c := range count {
		out = append(out, podShape{numGPU: k[0], milli: k[1], p: float64(c) / float64(n)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].p != out[j].p {
			return out[i].p > out[j].p
		}
		return out[i].numGPU*1000+out[i].milli < out[j].numGPU*1000+out[j].milli
	})
	var cum float64
	for i, s := range out {
		cum += s.p
		if cum >= 0.95 {
			return out[:i+1]
		}
	}
	return out
}

// fragmentation is the paper's measure: for each node and frequent
// shape, the node's idle GPU capacity the shape could not use (all of it
// when the shape fits nowhere on the node, else that of the GPUs too full
// for it), weighted by the shape's frequency, as a % of all idle GPU
// capacity. Idle is per GPU: 1000 minus what allocs hold of it.
func fragmentation(tb testing.TB, st *state.StateStore, shapes []podShape) float64 {
	snap, err := st.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	nodes, err := snap.Nodes(nil, "")
	if err != nil {
		tb.Fatal(err)
	}
	var idleAll, fragged float64
	var norm float64
	for _, s := range shapes {
		norm += s.p
	}
	for _, n := range nodes {
		if len(n.NodeResources.Devices) == 0 {
			continue
		}
		used := map[string]int{}
		allocs, err := snap.AllocsByNode(nil, n.ID)
		if err != nil {
			tb.Fatal(err)
		}
		for _, a := range allocs {
			if a.TerminalStatus() {
				continue
			}
			for _, d := range allocGPUGrants(a) {
				for _, id := range d.DeviceIDs {
					used[id] += d.Milli()
				}
			}
		}
		var idle []int
		for _, d := range n.NodeResources.Devices[0].Instances {
			idle = append(idle, max(0, 1000-used[d.ID]))
		}
		sum := 0
		for _, v := range idle {
			sum += v
		}
		idleAll += float64(sum)
		for _, s := range shapes {
			fragged += s.p / norm * float64(unusable(idle, s))
		}
	}
	if idleAll == 0 {
		return 0
	}
	return 100 * fragged / idleAll
}

// unusable is the idle capacity of a node (per GPU) that shape s cannot
// use: all of it when s fits nowhere on the node; else, for a fraction,
// that of GPUs with less free than s asks, and for whole GPUs, that of
// GPUs not wholly free.
func unusable(idle []int, s podShape) int {
	total, whole, fits := 0, 0, 0
	for _, v := range idle {
		total += v
		if v == 1000 {
			whole++
		}
		if v >= s.milli {
			fits++
		}
	}
	if s.milli < 1000 && s.numGPU == 1 {
		if fits == 0 {
			return total
		}
		out := 0
		for _, v := range idle {
			if v < s.milli {
				out += v
			}
		}
		return out
	}
	if whole < s.numGPU {
		return total
	}
	return total - whole*1000
}

func allocGPUGrants(a *api.Allocation) []*api.AllocatedDeviceResource {
	var out []*api.AllocatedDeviceResource
	if a.AllocatedResources == nil {
		return nil
	}
	for _, t := range a.AllocatedResources.Tasks {
		out = append(out, t.Devices...)
	}
	return out
}

func openbInputs(tb testing.TB) ([]openbNode, []openbPod) {
	nodesPath, podsPath := "testdata/openb/openb_node_list_gpu_node.csv", "testdata/openb/openb_pod_list_default.csv"
	if p := os.Getenv("DROVER_OPENB_NODES"); p != "" {
		nodesPath = p
	}
	if p := os.Getenv("DROVER_OPENB_PODS"); p != "" {
		podsPath = p
	}
	nodes, err := loadOpenBNodes(nodesPath)
	if err != nil {
		tb.Fatal(err)
	}
	pods, err := loadOpenBPods(podsPath)
	if err != nil {
		tb.Fatal(err)
	}
	return nodes, pods
}

// BenchmarkOpenB replays the OpenB trace (DROVER_OPENB_SEEDS seeds, default
// 3) and reports the means: alloc-90/100/130-% (allocated GPU request at
// 90/100/130% arrived; target at 100: >= 96, the paper's FGD 95.23%),
// first-fail-% (arrived % at the first GPU pod not placed; target >= 95),
// unalloc-gpus-100 (GPUs' worth not placed at 100%), frag-100-% (the
// paper's fragmentation measure at 100%) and replay-s (seconds per seed;
// target < 30).
func BenchmarkOpenB(b *testing.B) {
	nodes, pods := openbInputs(b)
	seeds := 3
	if v, err := strconv.Atoi(os.Getenv("DROVER_OPENB_SEEDS")); err == nil && v > 0 {
		seeds = v
	}
	var sum openbResult
	var secs float64
	for i := 0; i < b.N; i++ {
		sum, secs = openbResult{}, 0
		for s := 0; s < seeds; s++ {
			r := replayOpenB(b, nodes, pods, uint64(s+1))
			sum.alloc90 += r.alloc90
			sum.alloc100 += r.alloc100
			sum.alloc130 += r.alloc130
			sum.firstFail += r.firstFail
			sum.unallocAt100 += r.unallocAt100
			sum.fragAt100 += r.fragAt100
			sum.pods += r.pods
			secs += r.elapsed.Seconds()
		}
	}
	n := float64(seeds)
	b.ReportMetric(sum.alloc90/n, "alloc-90-%")
	b.ReportMetric(sum.alloc100/n, "alloc-100-%")
	b.ReportMetric(sum.alloc130/n, "alloc-130-%")
	b.ReportMetric(sum.firstFail/n, "first-fail-%")
	b.ReportMetric(sum.unallocAt100/n, "unalloc-gpus-100")
	b.ReportMetric(sum.fragAt100/n, "frag-100-%")
	b.ReportMetric(float64(sum.pods)/n, "pods")
	b.ReportMetric(secs/n, "replay-s")
}

// The replay's bookkeeping on a small trace: the workload holds every pod
// and never passes 1.3x capacity, pods are placed, and the unusable idle
// capacity follows the paper's rule.
func TestOpenBReplaySmall(t *testing.T) {
	nodes := []openbNode{{name: "a", cpu: 8000, memMiB: 32768, gpus: 2, model: "T4"}, {name: "b", cpu: 8000, memMiB: 32768, gpus: 1, model: "P100"}}
	pods := []openbPod{{cpu: 1000, memMiB: 1024, numGPU: 1, milli: 1000}, {cpu: 1000, memMiB: 1024, numGPU: 2, milli: 1000},
		{cpu: 1000, memMiB: 1024}}
	work := openbWorkload(pods, 3000, 1)
	var total int64
	for _, p := range work {
		total += p.gpuReq()
	}
	if total > 3900 || len(work) < len(pods) {
		t.Errorf("workload of %d pods asks %d, want every pod and at most 1.3x of 3000", len(work), total)
	}
	r := replayOpenB(t, nodes, pods, 1)
	if r.alloc100 <= 0 || r.alloc100 > 100 || r.firstFail <= 0 {
		t.Errorf("replay: %+v", r)
	}
	for _, c := range []struct {
		idle []int
		s    podShape
		want int
	}{
		{[]int{1000, 500}, podShape{numGPU: 1, milli: 600}, 500},
		{[]int{300, 500}, podShape{numGPU: 1, milli: 600}, 800},
		{[]int{1000, 500}, podShape{numGPU: 2, milli: 1000}, 1500},
		{[]int{1000, 1000, 200}, podShape{numGPU: 2, milli: 1000}, 200},
	} {
		if got := unusable(c.idle, c.s); got != c.want {
			t.Errorf("unusable(%v, %+v) = %d, want %d", c.idle, c.s, got, c.want)
		}
	}
}
