package state

import (
	"bytes"
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// The typed alloc indexers build the keys memdb's reflective ones built,
// so lookups, prefixes and order are what they were.
func TestAllocIndexersMatchMemdb(t *testing.T) {
	allocs := []*api.Allocation{
		{ID: "0f9c1e2a-7d41-4b8e-9a0c-3e5f6a7b8c9d", Namespace: "default", JobID: "web", NodeID: "node-1", DeploymentID: "d-1"},
		{ID: "alloc-1", Namespace: "prod", JobID: "batch/x", NodeID: ""},
		{ID: "alloc-2", Namespace: "", JobID: "web"},
	}
	type indexer interface {
		memdb.Indexer
		memdb.SingleIndexer
	}
	pairs := []struct {
		name          string
		typed, memdb_ indexer
		args          []any
	}{
		{"id", allocString{get: func(a *api.Allocation) string { return a.ID }}, str("ID").(indexer), []any{"alloc-1"}},
		{"node", allocString{get: func(a *api.Allocation) string { return a.NodeID }, room: idRoom}, str("NodeID").(indexer), []any{"node-1"}},
		{"deployment", allocString{get: func(a *api.Allocation) string { return a.DeploymentID }, room: idRoom}, str("DeploymentID").(indexer), []any{"d-1"}},
		{"job", allocJob{}, nsKey("JobID").(indexer), []any{"prod", "batch/x"}},
	}
	for _, p := range pairs {
		for _, a := range allocs {
			ok1, k1, err1 := p.typed.FromObject(a)
			ok2, k2, err2 := p.memdb_.FromObject(a)
			if ok1 != ok2 || !bytes.Equal(k1, k2) || (err1 == nil) != (err2 == nil) {
				t.Errorf("%s of %s: typed (%v, %q, %v), memdb (%v, %q, %v)", p.name, a.ID, ok1, k1, err1, ok2, k2, err2)
			}
		}
		k1, err1 := p.typed.FromArgs(p.args...)
		k2, err2 := p.memdb_.FromArgs(p.args...)
		if !bytes.Equal(k1, k2) || err1 != nil || err2 != nil {
			t.Errorf("%s args: typed (%q, %v), memdb (%q, %v)", p.name, k1, err1, k2, err2)
		}
		if _, err := p.typed.FromArgs(); err == nil {
			t.Errorf("%s: no arguments accepted", p.name)
		}
		if _, err := p.typed.FromArgs(1, 2); err == nil {
			t.Errorf("%s: non-string arguments accepted", p.name)
		}
		if _, _, err := p.typed.FromObject(&api.Node{}); err == nil {
			t.Errorf("%s: a node indexed as an alloc", p.name)
		}
	}
	typed := allocString{get: func(a *api.Allocation) string { return a.ID }}
	k1, err1 := typed.PrefixFromArgs("0f9c")
	k2, err2 := str("ID").(memdb.PrefixIndexer).PrefixFromArgs("0f9c")
	if !bytes.Equal(k1, k2) || err1 != nil || err2 != nil {
		t.Errorf("prefix: typed (%q, %v), memdb (%q, %v)", k1, err1, k2, err2)
	}
}
