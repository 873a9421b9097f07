package state

import (
	"errors"
	"testing"

	"github.com/drover/drover/api"
)

// Pools: built-ins always listed and never written; a node registering in
// a new pool creates it; applying keeps CreateIndex; delete refuses
// built-in, unknown, and busy pools (nodes, live jobs) and changes nothing
// then; restoring a snapshot without pool rows recreates its nodes' pools.
func TestNodePools(t *testing.T) {
	s := NewStateStore()
	n := testNode("n1")
	n.NodePool = "gpu"
	must(t, s.UpsertNode(1, n))
	got, err := s.NodePools(nil, "")
	must(t, err)
	if names := ids(got, func(p *api.NodePool) string { return p.Name }); len(names) != 3 || names[0] != "all" || names[1] != "default" || names[2] != "gpu" {
		t.Fatalf("pools %v, want all default gpu", names)
	}
	must(t, s.UpsertNodePools(2, []*api.NodePool{{Name: "gpu", Description: "H100s", Meta: map[string]string{"team": "ml"}}, {Name: "cpu"}}))
	p, err := s.NodePoolByName(nil, "gpu")
	must(t, err)
	if p.Description != "H100s" || p.CreateIndex != 1 || p.ModifyIndex != 2 {
		t.Errorf("gpu pool %+v, want the description, created at 1, modified at 2", p)
	}
	if err := s.UpsertNodePools(3, []*api.NodePool{{Name: "ok"}, {Name: "default"}}); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("upsert with a built-in: %v", err)
	}
	if p, _ := s.NodePoolByName(nil, "ok"); p != nil {
		t.Error("a refused upsert stored a pool")
	}
	j := testJob("web", "g")
	j.NodePool = "cpu"
	must(t, s.UpsertJob(3, j))
	for name, want := range map[string]error{"all": api.ErrBadRequest, "nope": api.ErrNotFound, "gpu": api.ErrBadRequest, "cpu": api.ErrBadRequest} {
		if err := s.DeleteNodePools(4, []string{name}); !errors.Is(err, want) {
			t.Errorf("delete %s: %v, want %v", name, err, want)
		}
	}
	must(t, s.DeleteNode(5, []string{"n1"}))
	must(t, s.DeleteNodePools(6, []string{"gpu"}))
	if p, _ := s.NodePoolByName(nil, "gpu"); p != nil {
		t.Error("gpu pool still there after delete")
	}

	// A snapshot from before pools were stored: only its nodes.
	old := testNode("n2")
	old.NodePool, old.CreateIndex = "legacy", 7
	s2 := NewStateStore()
	r := s2.Restore()
	must(t, r.Node(old))
	r.Commit()
	if p, _ := s2.NodePoolByName(nil, "legacy"); p == nil || p.CreateIndex != 7 {
		t.Errorf("restored pool %+v, want legacy created at 7", p)
	}
}
