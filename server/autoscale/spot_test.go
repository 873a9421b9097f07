package autoscale

import (
	"fmt"
	"testing"

	"github.com/drover/drover/api"
)

// spot = "never" keeps a group off spot nodes (and says so when only
// spot nodes have room), "prefer" ranks spot nodes first, "allow" takes
// either.
func TestSpotPlacement(t *testing.T) {
	w := newWorld(t, 0)
	spot, onDemand := gpuPolicy(0, 1, StrategyEmpty).Shape, gpuPolicy(0, 1, StrategyEmpty).Shape
	onDemand.Spot = false
	for i := range 3 {
		if err := w.st.UpsertNode(w.next(), spot.Node(fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i), fmt.Sprintf("spot-%d", i), "gpu")); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.st.UpsertNode(w.next(), onDemand.Node("00000000-0000-4000-8000-000000000009", "ondemand", "gpu")); err != nil {
		t.Fatal(err)
	}
	isSpot := func(a *api.Allocation) bool {
		n, _ := w.st.NodeByID(nil, a.NodeID)
		return n.Meta[api.NodeMetaSpot] == "true"
	}
	serve := gpuJob("serve", 1, 8, false, "")
	serve.Spot = api.SpotNever
	w.submit(serve)
	w.settle()
	if a := w.liveAllocs("serve"); len(a) != 1 || isSpot(a[0]) {
		t.Fatalf("spot never: %d allocs, on spot %v; want 1 on the on-demand node", len(a), len(a) == 1 && isSpot(a[0]))
	}
	// The on-demand node is full: another "never" group waits, though
	// spot nodes are free.
	serve2 := gpuJob("serve2", 1, 8, false, "")
	serve2.TaskGroups[0].Spot = api.SpotNever
	w.submit(serve2)
	w.settle()
	if a := w.liveAllocs("serve2"); len(a) != 0 {
		t.Fatalf("spot never with only spot nodes free: %d allocs placed", len(a))
	}
	// prefer: with one spot and one on-demand node free, spot wins.
	w.finish("serve")
	for i := range 6 {
		id := fmt.Sprintf("train%d", i)
		j := gpuJob(id, 1, 1, false, "")
		j.Spot = api.SpotPrefer
		w.submit(j)
		w.settle()
		for _, a := range w.liveAllocs(id) {
			if !isSpot(a) {
				t.Fatalf("spot prefer: %s placed on the on-demand node with spot room free", id)
			}
		}
	}
}
