package scheduler

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/drover/drover/api"
)

// oracleScore is an independent transcription of the bin-pack score.
func oracleScore(cpuTotal, memTotal, cpuUsed, memUsed int64) float64 {
	fc := 1 - float64(cpuUsed)/float64(cpuTotal)
	fm := 1 - float64(memUsed)/float64(memTotal)
	s := 20 - (math.Pow(10, fc) + math.Pow(10, fm))
	return math.Min(18, math.Max(0, s)) / 18
}

// TestBinPackOracle compares placement against a brute-force oracle on
// random small clusters: with every feasible node sampled the chosen
// node's score is the oracle's best, and with the default sampling a node
// is found iff the oracle finds a feasible one and the chosen node is the
// best of those scored.
func TestBinPackOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	placedN, failedN := 0, 0
	for iter := 0; iter < 400; iter++ {
		st := newMemState()
		nNodes := 1 + r.IntN(7)
		type free struct{ cpuT, memT, cpuU, memU int64 }
		oracle := map[string]free{}
		for i := 0; i < nNodes; i++ {
			n := testNode(fmt.Sprintf("%d", i), "dc1", int64(1000+r.IntN(4000)), int64(1024+r.IntN(8192)))
			if r.IntN(6) == 0 {
				n.Status = api.NodeStatusDown
			}
			if r.IntN(6) == 0 {
				n.ReservedResources = &api.NodeReservedResources{Cpu: api.NodeCpuResources{CpuShares: 200}, Memory: api.NodeMemoryResources{MemoryMB: 256}}
			}
			st.addNode(n)
			cpuT, memT := n.NodeResources.Cpu.CpuShares, n.NodeResources.Memory.MemoryMB
			if n.ReservedResources != nil {
				cpuT -= 200
				memT -= 256
			}
			f := free{cpuT: cpuT, memT: memT}
			for k := r.IntN(4); k > 0; k-- {
				cpu, mem := int64(100+r.IntN(1500)), int64(64+r.IntN(3000))
				a := &api.Allocation{ID: fmt.Sprintf("other-%d-%d-%d", iter, i, k), Namespace: "default", JobID: "other",
					NodeID: n.ID, TaskGroup: "g", DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning,
					AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
						"t": {Cpu: api.AllocatedCpuResources{CpuShares: cpu}, Memory: api.AllocatedMemoryResources{MemoryMB: mem}}}}}
				if r.IntN(4) == 0 {
					a.ClientStatus = api.AllocClientStatusComplete // terminal: frees its resources
				} else {
					f.cpuU += cpu
					f.memU += mem
				}
				st.upsertAlloc(a)
			}
			if n.Status == api.NodeStatusReady {
				oracle[n.ID] = f
			}
		}
		askCPU, askMem := 100+r.IntN(2500), 64+r.IntN(4000)
		job := testJob("j", api.JobTypeService, 1, askCPU, askMem)
		job.TaskGroups[0].EphemeralDisk = &api.EphemeralDisk{SizeMB: 10}
		st.upsertJob(job)

		best, feasible := -1.0, false
		for _, f := range oracle {
			if f.cpuU+int64(askCPU) > f.cpuT || f.memU+int64(askMem) > f.memT {
				continue
			}
			feasible = true
			best = math.Max(best, oracleScore(f.cpuT, f.memT, f.cpuU+int64(askCPU), f.memU+int64(askMem)))
		}
		for _, limit := range []int{-1, 0} {
			res, err := Schedule(st, testEval(job, iter), Options{Now: testNow, SampleLimit: limit})
			if err != nil {
				t.Fatal(err)
			}
			var placed *api.Allocation
			for _, l := range res.Plan.NodeAllocation {
				placed = l[0]
			}
			if (placed != nil) != feasible {
				t.Fatalf("iter %d limit %d: placed=%v, oracle feasible=%v", iter, limit, placed != nil, feasible)
			}
			if placed == nil {
				failedN++
				if res.Eval.FailedTGAllocs["web"] == nil {
					t.Fatalf("iter %d: no placement and no failure metric", iter)
				}
				continue
			}
			placedN++
			f := oracle[placed.NodeID]
			got := oracleScore(f.cpuT, f.memT, f.cpuU+int64(askCPU), f.memU+int64(askMem))
			meta := placed.Metrics.ScoreMetaData
			if len(meta) == 0 || meta[0].NodeID != placed.NodeID {
				t.Fatalf("iter %d: chosen node %s is not the top scored %+v", iter, placed.NodeID, meta)
			}
			if bp, _ := meta[0].Scores.Get("binpack"); math.Abs(bp-got) > 1e-9 {
				t.Fatalf("iter %d: scheduler binpack %v, oracle %v", iter, bp, got)
			}
			if limit < 0 && math.Abs(got-best) > 1e-9 {
				t.Fatalf("iter %d: chosen score %v, oracle best %v", iter, got, best)
			}
		}
	}
	if placedN < 100 || failedN < 20 {
		t.Fatalf("inputs too one-sided: %d placed, %d failed", placedN, failedN)
	}
}
