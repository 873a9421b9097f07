package state

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/scheduler"
)

var _ scheduler.VersionedState = (*SchedulerView)(nil)

// nodeAllocsRender is what a version must pin down: the node's allocs
// with every field a pass reads changing with ModifyIndex.
func nodeAllocsRender(t *testing.T, allocs []*api.Allocation) string {
	t.Helper()
	var b strings.Builder
	for _, a := range allocs {
		fmt.Fprintf(&b, "%s@%d/%s/%s;", a.ID, a.ModifyIndex, a.DesiredStatus, a.ClientStatus)
	}
	return b.String()
}

// A node's allocs version changes with every write of one of its allocs:
// placed, updated by a server write or a client's status report,
// stopped, given a desired transition, collected. Writes of other
// nodes' allocs and of nodes leave it as it is. A snapshot and its
// scheduler view name the version of their point in time, and keep it
// while the store moves on.
//
// The version is a radix node's watch channel, so a write elsewhere may
// change it too when it reshapes the path above the node's allocs: a
// split (another node's first alloc whose ID shares a longer prefix) or
// a merge (the last alloc of the only sibling branch). That costs a
// UsageCache a miss, never a stale hit. Here the nodes' IDs part at one
// byte, and C keeps a third branch there, so B's writes reshape nothing
// above A.
func TestNodeAllocsVersion(t *testing.T) {
	for _, tt := range []struct{ name, a, b, c string }{
		{"text IDs", "node-a", "node-b", "node-c"},
		{"UUIDs", "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002",
			"cccccccc-0000-4000-8000-000000000003"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStateStore()
			var index uint64
			next := func() uint64 { index++; return index }
			must(t, s.UpsertJob(next(), testJob("web")))
			for _, id := range []string{tt.a, tt.b, tt.c} {
				must(t, s.UpsertNode(next(), testNode(id)))
			}
			must(t, s.UpsertAllocs(next(), []*api.Allocation{testAlloc("b1", "web", tt.b), testAlloc("c1", "web", tt.c)}))
			version := func(nodeID string) any {
				t.Helper()
				v, err := s.NodeAllocsVersion(nodeID)
				must(t, err)
				if v == nil {
					t.Fatalf("node %s: nil version", nodeID)
				}
				return v
			}
			changes := func(what string, write func()) {
				t.Helper()
				before := version(tt.a)
				write()
				if version(tt.a) == before {
					t.Errorf("%s: A's version did not change", what)
				}
			}
			keeps := func(what string, write func()) {
				t.Helper()
				before := version(tt.a)
				write()
				if version(tt.a) != before {
					t.Errorf("%s: A's version changed", what)
				}
			}

			changes("A's first alloc placed", func() {
				must(t, s.UpsertAllocs(next(), []*api.Allocation{testAlloc("a1", "web", tt.a)}))
			})
			changes("a second alloc placed on A", func() {
				must(t, s.UpsertAllocs(next(), []*api.Allocation{testAlloc("a2", "web", tt.a)}))
			})

			// The point in time the snapshot and views below keep.
			at := version(tt.a)
			atAllocs := nodeAllocsRender(t, mustAllocs(t)(s.AllocsByNode(nil, tt.a)))
			snap, err := s.Snapshot()
			must(t, err)
			early := snap.Scheduler() // first read only after the store moved on
			view := snap.Scheduler()
			if v, err := view.NodeAllocsVersion(tt.a); err != nil || v != at {
				t.Errorf("scheduler view at the store's index: version %v (%v), want the store's %v", v, err, at)
			}
			if v, err := snap.NodeAllocsVersion(tt.a); err != nil || v != at {
				t.Errorf("snapshot at the store's index: version %v (%v), want the store's %v", v, err, at)
			}

			keeps("an alloc placed on B", func() {
				must(t, s.UpsertAllocs(next(), []*api.Allocation{testAlloc("b2", "web", tt.b)}))
			})
			keeps("B's alloc reported running", func() {
				must(t, s.UpdateAllocsFromClient(next(), []*api.Allocation{{ID: "b1", ClientStatus: api.AllocClientStatusRunning}}))
			})
			keeps("B's alloc stopped by a plan", func() {
				must(t, s.UpsertPlanResults(next(), &ApplyPlanResultsRequest{AllocsStopped: []*api.Allocation{{ID: "b1"}}}))
			})
			keeps("B's allocs collected", func() {
				must(t, s.DeleteEvals(next(), nil, []string{"b1", "b2"}))
			})
			keeps("A's node re-registered", func() {
				must(t, s.UpsertNode(next(), testNode(tt.a)))
			})
			keeps("A's node drained", func() {
				must(t, s.UpdateNodeDrain(next(), tt.a, &api.DrainStrategy{}, false, nil))
			})
			keeps("the job updated", func() {
				j := testJob("web")
				j.Priority = 70
				must(t, s.UpsertJob(next(), j))
			})

			changes("A's alloc reported running (client status only)", func() {
				must(t, s.UpdateAllocsFromClient(next(), []*api.Allocation{{ID: "a1", ClientStatus: api.AllocClientStatusRunning}}))
			})
			changes("A's alloc updated by the servers", func() {
				a := testAlloc("a2", "web", tt.a)
				a.DesiredDescription = "updated in place"
				must(t, s.UpsertAllocs(next(), []*api.Allocation{a}))
			})
			changes("A's alloc given a desired transition", func() {
				yes := true
				must(t, s.UpdateAllocsDesiredTransitions(next(), map[string]*api.DesiredTransition{"a2": {Migrate: &yes}}, nil))
			})
			changes("A's alloc stopped by a plan (desired stop)", func() {
				must(t, s.UpsertPlanResults(next(), &ApplyPlanResultsRequest{AllocsStopped: []*api.Allocation{{ID: "a1"}}}))
			})
			changes("A's stopped alloc reported complete", func() {
				must(t, s.UpdateAllocsFromClient(next(), []*api.Allocation{{ID: "a1", ClientStatus: api.AllocClientStatusComplete}}))
			})
			changes("A's alloc collected", func() {
				must(t, s.DeleteEvals(next(), nil, []string{"a1"}))
			})
			changes("A's last alloc collected", func() {
				must(t, s.DeleteEvals(next(), nil, []string{"a2"}))
			})

			for name, r := range map[string]interface {
				NodeAllocsVersion(string) (any, error)
			}{"snapshot": snap, "scheduler view": view, "view first read now": early} {
				if v, err := r.NodeAllocsVersion(tt.a); err != nil || v != at {
					t.Errorf("%s after the store moved on: version %v (%v), want the one of its point in time %v", name, v, err, at)
				}
			}
			if got := nodeAllocsRender(t, mustAllocs(t)(snap.AllocsByNode(nil, tt.a))); got != atAllocs {
				t.Errorf("snapshot's allocs of A: got %s, want %s", got, atAllocs)
			}
			if version(tt.a) == at {
				t.Error("the store still has the snapshot's version of A after A's allocs changed")
			}
		})
	}
}

// Equal versions of a node hold equal allocs, whatever the writes: over
// a random sequence of writes to the allocs of nodes whose IDs share
// prefixes (text and UUID), every version of a node seen (of the store
// or of any snapshot taken along the way) always comes with the same
// allocs, and a write to a node's allocs always gives it a new version.
func TestNodeAllocsVersionPinsAllocs(t *testing.T) {
	nodes := []string{"n1", "n10", "n2", "aaaaaaaa-0000-4000-8000-000000000001", "aaaaaaab-0000-4000-8000-000000000001",
		"aaaaaaaa-0000-4000-8000-000000000002"}
	for seed := range uint64(10) {
		r := rand.New(rand.NewPCG(seed, 0xa110c))
		s := NewStateStore()
		var index uint64
		next := func() uint64 { index++; return index }
		must(t, s.UpsertJob(next(), testJob("web")))
		for _, id := range nodes {
			must(t, s.UpsertNode(next(), testNode(id)))
		}
		// A node without allocs may share another node's version (the
		// radix node where its key would branch off), so versions pin
		// allocs per node.
		type nodeVersion struct {
			node string
			v    any
		}
		seen := map[nodeVersion]string{} // -> the node's allocs
		last := map[string]any{}         // node -> its version after the last step
		type point struct {
			snap *Snapshot
			view *SchedulerView
		}
		var points []point
		var live []*api.Allocation // allocs not collected (as last written)
		n := 0
		verify := func(step int, what string, nodeID string, v any, allocs []*api.Allocation) {
			t.Helper()
			got := nodeAllocsRender(t, allocs)
			k := nodeVersion{nodeID, v}
			if want, ok := seen[k]; ok && want != got {
				t.Fatalf("seed %d step %d: %s: node %s's version %v held %s before, now %s", seed, step, what, nodeID, v, want, got)
			}
			seen[k] = got
		}
		for step := range 150 {
			touched := ""
			switch op := r.IntN(6); {
			case op == 0 || len(live) == 0:
				n++
				a := testAlloc(fmt.Sprintf("x%d", n), "web", nodes[r.IntN(len(nodes))])
				must(t, s.UpsertAllocs(next(), []*api.Allocation{a}))
				live = append(live, a)
				touched = a.NodeID
			case op == 1:
				a := live[r.IntN(len(live))]
				st := []string{api.AllocClientStatusRunning, api.AllocClientStatusComplete, api.AllocClientStatusFailed}[r.IntN(3)]
				must(t, s.UpdateAllocsFromClient(next(), []*api.Allocation{{ID: a.ID, ClientStatus: st}}))
				touched = a.NodeID
			case op == 2:
				a := live[r.IntN(len(live))]
				must(t, s.UpsertPlanResults(next(), &ApplyPlanResultsRequest{AllocsStopped: []*api.Allocation{{ID: a.ID}}}))
				touched = a.NodeID
			case op == 3:
				i := r.IntN(len(live))
				a := live[i]
				must(t, s.DeleteEvals(next(), nil, []string{a.ID}))
				live = append(live[:i], live[i+1:]...)
				touched = a.NodeID
			case op == 4:
				must(t, s.UpsertNode(next(), testNode(nodes[r.IntN(len(nodes))])))
			default:
				snap, err := s.Snapshot()
				must(t, err)
				points = append(points, point{snap, snap.Scheduler()})
			}
			for _, id := range nodes {
				v, err := s.NodeAllocsVersion(id)
				must(t, err)
				verify(step, "store", id, v, mustAllocs(t)(s.AllocsByNode(nil, id)))
				if id == touched && v == last[id] {
					t.Fatalf("seed %d step %d: a write of node %s's allocs left its version", seed, step, id)
				}
				last[id] = v
				for _, p := range points {
					sv, err := p.snap.NodeAllocsVersion(id)
					must(t, err)
					verify(step, "snapshot", id, sv, mustAllocs(t)(p.snap.AllocsByNode(nil, id)))
					if vv, err := p.view.NodeAllocsVersion(id); err != nil || vv != sv {
						t.Fatalf("seed %d step %d: node %s: scheduler view's version %v (%v), its snapshot's %v", seed, step, id, vv, err, sv)
					}
				}
			}
		}
	}
}

func mustAllocs(t testing.TB) func([]*api.Allocation, error) []*api.Allocation {
	return func(v []*api.Allocation, err error) []*api.Allocation {
		t.Helper()
		must(t, err)
		return v
	}
}
