package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/drover/drover/api"
)

// TestDeviceIndexProperty: on random clusters of GPU node shapes (some
// GPUs unhealthy, some in use) a job of several groups asking for GPUs
// gets a plan that fits every node, uses only healthy free GPUs, and
// leaves a group's allocs unplaced only when no node has enough free
// GPUs left for its ask (the device index never loses a node that could
// take it, as the pass places group after group).
func TestDeviceIndexProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 5))
	shapes := []func(string) *api.Node{nvswitchNode, quadNode, pcieLike, dgxLike}
	failures := 0
	for iter := 0; iter < 150; iter++ {
		st := newMemState()
		for i, n := 0, 2+r.IntN(10); i < n; i++ {
			node := shapes[r.IntN(len(shapes))](fmt.Sprintf("%d-%d", iter, i))
			for _, d := range node.NodeResources.Devices[0].Instances {
				d.Healthy = r.IntN(8) != 0
			}
			st.addNode(node)
		}
		for k := r.IntN(8); k > 0; k-- { // earlier work
			j := gpuJob(fmt.Sprintf("pre%d", k), uint64(1+r.IntN(4)))
			st.upsertJob(j)
			res, err := Schedule(st, testEval(j, k), Options{Now: testNow})
			if err != nil {
				t.Fatal(err)
			}
			st.apply(res.Plan)
		}
		job := gpuJob("job", 1)
		tmpl := job.TaskGroups[0]
		job.TaskGroups = nil
		wants := map[string]int{}
		for g := 0; g < 1+r.IntN(3); g++ {
			tg := *tmpl
			tg.Name = fmt.Sprintf("g%d", g)
			tg.Count = 1 + r.IntN(6)
			task := *tmpl.Tasks[0]
			res := *task.Resources
			wants[tg.Name] = []int{1, 2, 4}[r.IntN(3)]
			res.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(wants[tg.Name])}}
			task.Resources = &res
			tg.Tasks = []*api.Task{&task}
			job.TaskGroups = append(job.TaskGroups, &tg)
		}
		st.upsertJob(job)
		res, err := Schedule(st, testEval(job, 99), Options{Now: testNow})
		if err != nil {
			t.Fatal(err)
		}
		for node := range res.Plan.NodeAllocation {
			if ok, why, err := NodePlanFits(st, res.Plan, node); err != nil || !ok {
				t.Fatalf("iter %d: plan does not fit node %s: %s %v", iter, node, why, err)
			}
		}
		st.apply(res.Plan)
		for g := range res.Eval.FailedTGAllocs {
			failures++
			for _, n := range st.nodes {
				if free := freeHealthyGPUs(st, n); free >= wants[g] {
					t.Fatalf("iter %d: group %s (%d GPUs) left unplaced while node %s has %d free", iter, g, wants[g], n.Name, free)
				}
			}
		}
	}
	if failures < 20 {
		t.Fatalf("only %d groups with unplaced allocs: inputs too easy", failures)
	}
}

// freeHealthyGPUs counts the node's healthy GPUs no live alloc uses.
func freeHealthyGPUs(st *memState, n *api.Node) int {
	used := map[string]bool{}
	for _, a := range st.byNode[n.ID] {
		if !a.TerminalStatus() {
			for _, id := range allocGPUs(a) {
				if used[id] {
					panic("device " + id + " given twice")
				}
				used[id] = true
			}
		}
	}
	free := 0
	for _, d := range n.NodeResources.Devices[0].Instances {
		if used[d.ID] && !d.Healthy {
			panic("unhealthy device " + d.ID + " given")
		}
		if d.Healthy && !used[d.ID] {
			free++
		}
	}
	return free
}
