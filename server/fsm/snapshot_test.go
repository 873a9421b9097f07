package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"
	"unsafe"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-memdb"
)

type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

// populated returns an FSM with something in every table.
func populated(t *testing.T) *FSM {
	f := New(Config{})
	a := &applier{t: t, f: f}
	yes := true
	a.mustApply(NodeRegisterType, NodeRegisterRequest{Node: node("n1")})
	a.mustApply(NodeRegisterType, NodeRegisterRequest{Node: node("n2")})
	a.mustApply(NodeStatusUpdateType, NodeStatusUpdateRequest{NodeID: "n2", Status: api.NodeStatusDown,
		Event: &api.NodeEvent{Message: "down", Timestamp: time.Unix(100, 0).UTC()}})
	a.mustApply(JobRegisterType, JobRegisterRequest{Job: job("web"), Eval: eval("e1", "web")})
	a.mustApply(JobRegisterType, JobRegisterRequest{Job: job("web"), Eval: eval("e2", "web")})
	a.mustApply(JobRegisterType, JobRegisterRequest{Job: job("api"), Eval: eval("e3", "api")})
	a.mustApply(ApplyPlanResultsType, ApplyPlanResultsRequest{Job: job("web"),
		AllocsPlaced: []*api.Allocation{withRes(alloc("a1", "web", "n1")), withRes(alloc("a2", "web", "n1"))},
		Deployment: &api.Deployment{ID: "d1", JobID: "web", Status: api.DeploymentStatusRunning,
			TaskGroups: map[string]*api.DeploymentState{"web": {DesiredTotal: 2}}},
		Evals: []*api.Evaluation{{ID: "e2", JobID: "web", Status: api.EvalStatusComplete,
			QueuedAllocations: map[string]int{"web": 0}}}})
	a.mustApply(AllocUpsertType, AllocUpsertRequest{Allocs: []*api.Allocation{alloc("b1", "api", "n2")}})
	a.mustApply(AllocClientUpdateType, AllocClientUpdateRequest{Allocs: []*api.Allocation{{ID: "a1",
		ClientStatus: api.AllocClientStatusRunning,
		TaskStates:   map[string]*api.TaskState{"t": {State: api.TaskStateRunning, StartedAt: time.Unix(200, 0).UTC()}}}}})
	a.mustApply(AllocDesiredTransitionType, AllocDesiredTransitionRequest{
		Transitions: map[string]*api.DesiredTransition{"a2": {Migrate: &yes}}})
	a.mustApply(ACLWriteType, state.ACLWrite{
		Policies: []*api.ACLPolicy{{Name: "ops", Rules: `node { policy = "read" }`}},
		Roles:    []*api.ACLRole{{ID: "r1", Name: "ops", Policies: []*api.ACLRolePolicyLink{{Name: "ops"}}}},
		Tokens:   []*api.ACLToken{{AccessorID: "t1", SecretID: "s1", Type: api.ACLTokenClient, Policies: []string{"ops"}}},
		AuthMethods: []*api.ACLAuthMethod{{Name: "sso", Type: api.ACLAuthMethodTypeOIDC, Default: true,
			Config: &api.ACLAuthMethodConfig{OIDCDiscoveryURL: "https://idp.example", OIDCClientID: "drover"}}},
		BindingRules: []*api.ACLBindingRule{{ID: "b1", AuthMethod: "sso", Selector: `"eng" in list.groups`,
			BindType: api.ACLBindTypeRole, BindName: "ops"}}})
	return f
}

func tables(t *testing.T, s *state.StateStore) map[string][]any {
	t.Helper()
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]any{}
	if err := snap.Persist(func(table string, obj any) error {
		out[table] = append(out[table], obj)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func persist(t *testing.T, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed=%v cancelled=%v", sink.closed, sink.cancelled)
	}
	return sink.Bytes()
}

// withRes gives a its task's plain resources.
func withRes(a *api.Allocation) *api.Allocation {
	a.AllocatedResources = &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
		"web": {Cpu: api.AllocatedCpuResources{CpuShares: 100}, Memory: api.AllocatedMemoryResources{MemoryMB: 64}}}}
	return a
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	src := populated(t)
	data := persist(t, src)

	dst := New(Config{})
	old := dst.State()
	ws := memdb.NewWatchSet()
	if _, err := old.JobByID(ws, "", "web"); err != nil {
		t.Fatal(err)
	}
	if err := dst.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.AbandonCh():
	default:
		t.Error("old store not abandoned")
	}
	if ws.Watch(nil) {
		t.Error("blocked query on the old store not woken")
	}
	want, got := tables(t, src.State()), tables(t, dst.State())
	for _, table := range []string{state.TableJobs, state.TableJobVersions, state.TableJobSummary, state.TableNodes,
		state.TableAllocs, state.TableEvals, state.TableDeployments, state.TableIndex} {
		if len(want[table]) == 0 {
			t.Errorf("%s: the fixture has nothing in it", table)
		}
		if diff := cmp.Diff(want[table], got[table]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", table, diff)
		}
	}
	a1, _ := dst.State().AllocByID(nil, "a1")
	a2, _ := dst.State().AllocByID(nil, "a2")
	if a1.Job == nil || a1.Job != a2.Job {
		t.Error("allocs of one plan no longer share their job after restore")
	}
	n1, _ := dst.State().NodeByID(nil, "n1")
	if unsafe.StringData(a1.NodeID) != unsafe.StringData(n1.ID) || a1.AllocatedResources != a2.AllocatedResources {
		t.Error("allocs hold their own copies of their node's ID or of equal resources after restore (state/share.go)")
	}
	if g, w := dst.State().LatestIndex(), src.State().LatestIndex(); g != w {
		t.Errorf("latest index: got %d, want %d", g, w)
	}
}

func record(typ recordType, body string) []byte {
	b := []byte{byte(typ), 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(len(body)))
	return append(b, body...)
}

func TestRestoreRejectsBadStreams(t *testing.T) {
	good := persist(t, populated(t))
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"unknown record type", append(append([]byte{}, good...), record(99, `{}`)...), ErrUnknownRecord},
		{"empty", nil, ErrBadSnapshot},
		{"no header", record(recJob, `{"ID":"x","Namespace":"default"}`), ErrBadSnapshot},
		{"future format", record(recHeader, `{"Format":7}`), ErrBadSnapshot},
		{"truncated", good[:len(good)-3], ErrBadSnapshot},
		{"alloc with unknown job ref", append(record(recHeader, `{"Format":1}`),
			record(recAlloc, `{"JobRef":4,"Alloc":{"ID":"a","JobID":"j","Namespace":"default"}}`)...), ErrBadSnapshot},
		{"oversized record", append(record(recHeader, `{"Format":1}`), 2, 0xff, 0xff, 0xff, 0xff), ErrBadSnapshot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := populated(t)
			before := tables(t, f.State())
			store := f.State()
			err := f.Restore(io.NopCloser(bytes.NewReader(tt.data)))
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if f.State() != store {
				t.Fatal("store swapped although the restore failed")
			}
			if diff := cmp.Diff(before, tables(t, f.State())); diff != "" {
				t.Errorf("state changed (-before +after):\n%s", diff)
			}
		})
	}
}
