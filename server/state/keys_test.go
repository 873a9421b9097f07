package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// The typed alloc indexers build memdb's reflective keys behind a text
// tag for IDs that are not lowercase UUIDs, and the tag and 16 bytes for
// those that are; the job index's namespace and job ID stay text.
func TestAllocIndexersKeys(t *testing.T) {
	const u = "0f9c1e2a-7d41-4b8e-9a0c-3e5f6a7b8c9d"
	ub := []byte{keyUUID, 0x0f, 0x9c, 0x1e, 0x2a, 0x7d, 0x41, 0x4b, 0x8e, 0x9a, 0x0c, 0x3e, 0x5f, 0x6a, 0x7b, 0x8c, 0x9d}
	allocs := []*api.Allocation{
		{ID: u, Namespace: "default", JobID: "web", NodeID: "node-1", DeploymentID: "d-1"},
		{ID: "alloc-1", Namespace: "prod", JobID: "batch/x", NodeID: ""},
		{ID: "alloc-2", Namespace: "", JobID: "web"},
		{ID: strings.ToUpper(u), Namespace: "default", JobID: "web", NodeID: u},
	}
	type indexer interface {
		memdb.Indexer
		memdb.SingleIndexer
	}
	text := func(old indexer) func(a *api.Allocation) (bool, []byte, error) {
		return func(a *api.Allocation) (bool, []byte, error) {
			ok, k, err := old.FromObject(a)
			if ok {
				k = append([]byte{keyText}, k...)
			}
			return ok, k, err
		}
	}
	pairs := []struct {
		name  string
		typed indexer
		want  func(a *api.Allocation) (bool, []byte, error)
		args  []any
	}{
		{"id", allocString{get: func(a *api.Allocation) string { return a.ID }}, text(str("ID").(indexer)), []any{"alloc-1"}},
		{"node", allocString{get: func(a *api.Allocation) string { return a.NodeID }, room: idRoom}, text(str("NodeID").(indexer)), []any{"node-1"}},
		{"deployment", allocString{get: func(a *api.Allocation) string { return a.DeploymentID }, room: idRoom}, text(str("DeploymentID").(indexer)), []any{"d-1"}},
		{"job", allocJob{}, func(a *api.Allocation) (bool, []byte, error) { return nsKey("JobID").(indexer).FromObject(a) }, []any{"prod", "batch/x"}},
	}
	for _, p := range pairs {
		for _, a := range allocs {
			ok1, k1, err1 := p.typed.FromObject(a)
			ok2, k2, err2 := p.want(a)
			if p.name == "id" && a.ID == u || p.name == "node" && a.NodeID == u {
				k2 = ub
			}
			if ok1 != ok2 || !bytes.Equal(k1, k2) || (err1 == nil) != (err2 == nil) {
				t.Errorf("%s of %s: got (%v, %q, %v), want (%v, %q, %v)", p.name, a.ID, ok1, k1, err1, ok2, k2, err2)
			}
		}
		k, err := p.typed.FromArgs(p.args...)
		_, want, _ := p.want(&api.Allocation{ID: "alloc-1", NodeID: "node-1", DeploymentID: "d-1", Namespace: "prod", JobID: "batch/x"})
		if !bytes.Equal(k, want) || err != nil {
			t.Errorf("%s args: got (%q, %v), want %q", p.name, k, err, want)
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
	id := allocString{get: func(a *api.Allocation) string { return a.ID }}
	if k, err := id.FromArgs(u); !bytes.Equal(k, ub) || err != nil {
		t.Errorf("UUID lookup key (%q, %v), want %q", k, err, ub)
	}
	if _, err := id.PrefixFromArgs("0f9c"); err == nil {
		t.Error("a text prefix accepted (it may span both key kinds)")
	}
}

// TestUUIDKeysSortAsText: within each kind, keys sort as the IDs do, and
// no two IDs share a key.
func TestUUIDKeysSortAsText(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var ids []string
	for range 200 {
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		u := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
		ids = append(ids, u, u[:35]+"g", strings.ToUpper(u), "x"+u[:35])
	}
	ids = append(ids, "a", "a1", "b", "0")
	keys := map[string]string{}
	for _, id := range ids {
		k := string(idKey(nil, id))
		if other, dup := keys[k]; dup && other != id {
			t.Fatalf("%q and %q share a key", id, other)
		}
		keys[k] = id
	}
	byKey := slices.Clone(ids)
	slices.SortFunc(byKey, func(a, b string) int { return bytes.Compare(idKey(nil, a), idKey(nil, b)) })
	isUUID := func(s string) bool { _, ok := parseUUID(s); return ok }
	var text, uuids []string
	for _, id := range byKey {
		if isUUID(id) {
			uuids = append(uuids, id)
		} else {
			if len(uuids) > 0 {
				t.Fatalf("text key %q after UUID keys", id)
			}
			text = append(text, id)
		}
	}
	if len(uuids) != 200 || !slices.IsSorted(text) || !slices.IsSorted(uuids) {
		t.Errorf("%d UUIDs; text sorted %v, UUIDs sorted %v", len(uuids), slices.IsSorted(text), slices.IsSorted(uuids))
	}
}

// TestAllocsByIDPrefixBothKinds: a prefix lists the allocs whose ID starts
// with it, UUIDs and text IDs alike, in ID order, in the namespace asked.
func TestAllocsByIDPrefixBothKinds(t *testing.T) {
	all := []string{
		"0f9c1e2a-7d41-4b8e-9a0c-3e5f6a7b8c9d", "0f9c1e2a-7d41-4b8e-9a0c-3e5f6a7b8c9e", "0f9d0000-0000-4000-8000-000000000000",
		"1a2b3c4d-0000-4000-8000-000000000000", "0f9-custom", "0f", "0F9C1E2A-7D41-4B8E-9A0C-3E5F6A7B8C9D", "alloc-1", "zz",
	}
	s := NewStateStore()
	must(t, s.Write(1, func(tx *Txn) error {
		var allocs []*api.Allocation
		for i, id := range all {
			a := testAlloc(id, "web", "n1")
			if i == 3 {
				a.Namespace = "prod"
			}
			allocs = append(allocs, a)
		}
		return tx.UpsertAllocs(allocs)
	}))
	for _, ns := range []string{"*", "default"} {
		for _, prefix := range []string{"", "0", "0f", "0f9", "0f9c", "0f9c1e2a", "0f9c1e2a-", "0f9c1e2a-7", "0f9c1e2a-7d41-4b8e-9a0c-3e5f6a7b8c9d",
			"0F", "1", "alloc", "x", "0f9c1e2a7"} {
			got, err := s.AllocsByIDPrefix(nil, ns, prefix)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{}
			for _, id := range all {
				if strings.HasPrefix(id, prefix) && (ns == "*" || id != all[3]) {
					want = append(want, id)
				}
			}
			slices.Sort(want)
			if diff := cmp.Diff(want, ids(got, allocID)); diff != "" {
				t.Errorf("ns %q prefix %q (-want +got):\n%s", ns, prefix, diff)
			}
		}
	}
}
