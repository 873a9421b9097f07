package state

import (
	"errors"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

func TestNodeWrites(t *testing.T) {
	t0 := time.Unix(1700000000, 0).UTC()
	drain := &api.DrainStrategy{DrainSpec: api.DrainSpec{Deadline: time.Hour}, StartedAt: t0}
	tests := []struct {
		name    string
		write   func(s *StateStore) error
		wantErr error
		check   func(t *testing.T, n *api.Node)
	}{
		{"register sets indexes and eligibility", func(s *StateStore) error { return nil }, nil,
			func(t *testing.T, n *api.Node) {
				if n.CreateIndex != 1 || n.ModifyIndex != 1 || n.SchedulingEligibility != api.NodeSchedulingEligible ||
					n.NodePool != api.DefaultNodePool {
					t.Errorf("got create=%d modify=%d elig=%q pool=%q", n.CreateIndex, n.ModifyIndex, n.SchedulingEligibility, n.NodePool)
				}
			}},
		{"status update with event", func(s *StateStore) error {
			return s.UpdateNodeStatus(2, "n1", api.NodeStatusDown, 99, &api.NodeEvent{Message: "missed heartbeat"})
		}, nil, func(t *testing.T, n *api.Node) {
			if n.Status != api.NodeStatusDown || n.StatusUpdatedAt != 99 || n.ModifyIndex != 2 || n.CreateIndex != 1 {
				t.Errorf("got %q at %d modify %d", n.Status, n.StatusUpdatedAt, n.ModifyIndex)
			}
			if len(n.Events) != 1 || n.Events[0].CreateIndex != 2 || n.Events[0].Message != "missed heartbeat" {
				t.Errorf("events: got %+v", n.Events)
			}
		}},
		{"invalid status", func(s *StateStore) error { return s.UpdateNodeStatus(2, "n1", "sleepy", 1, nil) },
			api.ErrBadRequest, nil},
		{"unknown node", func(s *StateStore) error { return s.UpdateNodeStatus(2, "nope", api.NodeStatusDown, 1, nil) },
			api.ErrNodeNotFound, nil},
		{"drain makes ineligible, re-register keeps drain", func(s *StateStore) error {
			if err := s.UpdateNodeDrain(2, "n1", drain, false, nil); err != nil {
				return err
			}
			return s.UpsertNode(3, testNode("n1"))
		}, nil, func(t *testing.T, n *api.Node) {
			if !n.Drain || n.DrainStrategy == nil || n.SchedulingEligibility != api.NodeSchedulingIneligible {
				t.Errorf("got drain=%v strategy=%v elig=%q", n.Drain, n.DrainStrategy, n.SchedulingEligibility)
			}
			if n.LastDrain == nil || n.LastDrain.Status != "draining" || !n.LastDrain.StartedAt.Equal(t0) {
				t.Errorf("last drain: %+v", n.LastDrain)
			}
			if n.CreateIndex != 1 || n.ModifyIndex != 3 {
				t.Errorf("indexes: create %d modify %d", n.CreateIndex, n.ModifyIndex)
			}
		}},
		{"drain end with mark eligible", func(s *StateStore) error {
			if err := s.UpdateNodeDrain(2, "n1", drain, false, nil); err != nil {
				return err
			}
			return s.UpdateNodeDrain(3, "n1", nil, true, &api.NodeEvent{Message: "drain complete", Timestamp: t0.Add(time.Minute)})
		}, nil, func(t *testing.T, n *api.Node) {
			if n.Drain || n.DrainStrategy != nil || n.SchedulingEligibility != api.NodeSchedulingEligible {
				t.Errorf("got drain=%v elig=%q", n.Drain, n.SchedulingEligibility)
			}
			if n.LastDrain == nil || n.LastDrain.Status != "complete" || !n.LastDrain.UpdatedAt.Equal(t0.Add(time.Minute)) {
				t.Errorf("last drain: %+v", n.LastDrain)
			}
		}},
		{"eligibility", func(s *StateStore) error {
			return s.UpdateNodeEligibility(2, "n1", api.NodeSchedulingIneligible, nil)
		}, nil, func(t *testing.T, n *api.Node) {
			if n.SchedulingEligibility != api.NodeSchedulingIneligible {
				t.Errorf("got %q", n.SchedulingEligibility)
			}
		}},
		{"eligible while draining is a conflict", func(s *StateStore) error {
			if err := s.UpdateNodeDrain(2, "n1", drain, false, nil); err != nil {
				return err
			}
			return s.UpdateNodeEligibility(3, "n1", api.NodeSchedulingEligible, nil)
		}, api.ErrConflict, nil},
		{"bad eligibility", func(s *StateStore) error { return s.UpdateNodeEligibility(2, "n1", "maybe", nil) },
			api.ErrBadRequest, nil},
		{"delete missing removes nothing", func(s *StateStore) error { return s.DeleteNode(2, []string{"n1", "nope"}) },
			api.ErrNodeNotFound, func(t *testing.T, n *api.Node) {
				if n == nil {
					t.Error("n1 deleted although the batch failed")
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStateStore()
			must(t, s.UpsertNode(1, testNode("n1")))
			err := tt.write(s)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v, want %v", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, mustGet[api.Node](t)(s.NodeByID(nil, "n1")))
			}
		})
	}
}

func TestNodeEventsCapped(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertNode(1, testNode("n1")))
	for i := uint64(2); i < 20; i++ {
		must(t, s.UpdateNodeStatus(i, "n1", api.NodeStatusReady, int64(i), &api.NodeEvent{Message: "hb"}))
	}
	n := mustGet[api.Node](t)(s.NodeByID(nil, "n1"))
	if len(n.Events) != MaxNodeEvents || n.Events[MaxNodeEvents-1].CreateIndex != 19 {
		t.Errorf("got %d events, last at %d", len(n.Events), n.Events[len(n.Events)-1].CreateIndex)
	}
}

func TestNodeLookups(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertNode(1, testNode("aa1")))
	must(t, s.UpsertNode(2, testNode("aa2")))
	must(t, s.UpsertNode(3, testNode("bb1")))
	if n := mustGet[api.Node](t)(s.NodeBySecretID(nil, "secret-aa2")); n == nil || n.ID != "aa2" {
		t.Errorf("by secret: got %v", n)
	}
	if n := mustGet[api.Node](t)(s.NodeBySecretID(nil, "")); n != nil {
		t.Errorf("empty secret matched %s", n.ID)
	}
	ns, err := s.Nodes(nil, "aa")
	must(t, err)
	if len(ns) != 2 || ns[0].ID != "aa1" || ns[1].ID != "aa2" {
		t.Errorf("prefix aa: got %d nodes", len(ns))
	}
	must(t, s.DeleteNode(4, []string{"aa1"}))
	if n := mustGet[api.Node](t)(s.NodeByID(nil, "aa1")); n != nil {
		t.Error("aa1 not deleted")
	}
	if g := s.Index(TableNodes); g != 4 {
		t.Errorf("nodes index: got %d, want 4", g)
	}
}

// TestDrainingNodes: the draining index holds exactly the nodes with a
// drain strategy, through a drain's start, a re-register and its end.
func TestDrainingNodes(t *testing.T) {
	s := NewStateStore()
	for _, id := range []string{"n1", "n2", "n3"} {
		must(t, s.UpsertNode(1, testNode(id)))
	}
	ids := func() []string {
		ns, err := s.DrainingNodes(nil)
		must(t, err)
		var out []string
		for _, n := range ns {
			out = append(out, n.ID)
		}
		return out
	}
	if got := ids(); len(got) != 0 {
		t.Fatalf("draining before any drain = %v", got)
	}
	drain := &api.DrainStrategy{DrainSpec: api.DrainSpec{Deadline: time.Hour}}
	must(t, s.UpdateNodeDrain(2, "n2", drain, false, nil))
	must(t, s.UpsertNode(3, testNode("n2"))) // re-register keeps the drain
	if got := ids(); len(got) != 1 || got[0] != "n2" {
		t.Fatalf("draining = %v, want [n2]", got)
	}
	must(t, s.UpdateNodeDrain(4, "n2", nil, true, nil))
	if got := ids(); len(got) != 0 {
		t.Fatalf("draining after the drain ended = %v", got)
	}
}
