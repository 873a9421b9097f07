package fsm

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
	"github.com/hashicorp/raft"
)

type recHooks struct {
	evals  []string
	allocs []string
	nodes  []string
}

func (h *recHooks) EvalsUpserted(evals []*api.Evaluation) {
	for _, e := range evals {
		h.evals = append(h.evals, e.ID)
	}
}
func (h *recHooks) AllocsUpdated(_ uint64, changes []AllocChange) {
	for _, c := range changes {
		h.allocs = append(h.allocs, c.After.ID)
	}
}
func (h *recHooks) NodesUpdated(_ uint64, nodes []*api.Node) {
	for _, n := range nodes {
		h.nodes = append(h.nodes, n.ID)
	}
}

type applier struct {
	t     *testing.T
	f     *FSM
	index uint64
}

func (a *applier) apply(typ MessageType, body any) error {
	a.t.Helper()
	buf, err := Encode(typ, body)
	if err != nil {
		a.t.Fatalf("encode: %v", err)
	}
	a.index++
	resp := a.f.Apply(&raft.Log{Index: a.index, Type: raft.LogCommand, Data: buf})
	if err, ok := resp.(error); ok {
		return err
	}
	if got, ok := resp.(uint64); !ok || got != a.index {
		a.t.Fatalf("response: got %#v, want index %d", resp, a.index)
	}
	return nil
}

func (a *applier) mustApply(typ MessageType, body any) {
	a.t.Helper()
	if err := a.apply(typ, body); err != nil {
		a.t.Fatalf("apply %v: %v", typ, err)
	}
}

func job(id string) *api.Job {
	return &api.Job{ID: id, Type: api.JobTypeService, Priority: 50, Datacenters: []string{"dc1"},
		TaskGroups: []*api.TaskGroup{{Name: "web", Count: 2}}}
}

func eval(id, jobID string) *api.Evaluation {
	return &api.Evaluation{ID: id, JobID: jobID, Type: api.JobTypeService, Priority: 50,
		TriggeredBy: api.EvalTriggerJobRegister, Status: api.EvalStatusPending}
}

func node(id string) *api.Node {
	return &api.Node{ID: id, SecretID: "s-" + id, Name: id, Datacenter: "dc1", Status: api.NodeStatusReady,
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 2000}}}
}

func alloc(id, jobID, nodeID string) *api.Allocation {
	return &api.Allocation{ID: id, JobID: jobID, NodeID: nodeID, TaskGroup: "web", EvalID: "e1",
		Name: api.AllocName(jobID, "web", 0), DesiredStatus: api.AllocDesiredStatusRun,
		ClientStatus: api.AllocClientStatusPending}
}

func TestApplyEachCommand(t *testing.T) {
	hooks := &recHooks{}
	f := New(Config{Hooks: hooks})
	a := &applier{t: t, f: f}
	st := func() *state.StateStore { return f.State() }
	yes := true

	steps := []struct {
		name  string
		typ   MessageType
		body  any
		check func(t *testing.T)
	}{
		{"job register with eval", JobRegisterType, JobRegisterRequest{Job: job("web"), Eval: eval("e1", "web")},
			func(t *testing.T) {
				j, _ := st().JobByID(nil, "", "web")
				e, _ := st().EvalByID(nil, "e1")
				if j == nil || e == nil || j.CreateIndex != e.CreateIndex {
					t.Errorf("job %v and eval %v not committed together", j, e)
				}
			}},
		{"node register", NodeRegisterType, NodeRegisterRequest{Node: node("n1")}, func(t *testing.T) {
			if n, _ := st().NodeByID(nil, "n1"); n == nil {
				t.Error("node missing")
			}
		}},
		{"plan results", ApplyPlanResultsType, ApplyPlanResultsRequest{Job: job("web"),
			AllocsPlaced: []*api.Allocation{alloc("a1", "web", "n1")},
			Evals:        []*api.Evaluation{{ID: "e1", JobID: "web", Status: api.EvalStatusComplete}}},
			func(t *testing.T) {
				al, _ := st().AllocByID(nil, "a1")
				if al == nil || al.Job == nil {
					t.Errorf("placed alloc: %+v", al)
				}
			}},
		{"alloc client update", AllocClientUpdateType, AllocClientUpdateRequest{
			Allocs: []*api.Allocation{{ID: "a1", ClientStatus: api.AllocClientStatusRunning}}},
			func(t *testing.T) {
				if al, _ := st().AllocByID(nil, "a1"); al.ClientStatus != api.AllocClientStatusRunning {
					t.Errorf("client status: %q", al.ClientStatus)
				}
			}},
		{"desired transition", AllocDesiredTransitionType, AllocDesiredTransitionRequest{
			Transitions: map[string]*api.DesiredTransition{"a1": {Migrate: &yes}}, Evals: []*api.Evaluation{eval("e2", "web")}},
			func(t *testing.T) {
				if al, _ := st().AllocByID(nil, "a1"); !al.DesiredTransition.ShouldMigrate() {
					t.Error("no migrate")
				}
			}},
		{"alloc upsert", AllocUpsertType, AllocUpsertRequest{Allocs: []*api.Allocation{alloc("a2", "web", "n1")}},
			func(t *testing.T) {
				if al, _ := st().AllocByID(nil, "a2"); al == nil {
					t.Error("a2 missing")
				}
			}},
		{"node status", NodeStatusUpdateType, NodeStatusUpdateRequest{NodeID: "n1", Status: api.NodeStatusDown,
			UpdatedAt: 5, Evals: []*api.Evaluation{eval("e3", "web")}}, func(t *testing.T) {
			if n, _ := st().NodeByID(nil, "n1"); n.Status != api.NodeStatusDown {
				t.Errorf("status %q", n.Status)
			}
		}},
		{"node drain", NodeDrainUpdateType, NodeDrainUpdateRequest{NodeID: "n1",
			DrainStrategy: &api.DrainStrategy{StartedAt: time.Unix(1, 0)}}, func(t *testing.T) {
			if n, _ := st().NodeByID(nil, "n1"); !n.Drain {
				t.Error("not draining")
			}
		}},
		{"node eligibility", NodeEligibilityUpdateType, NodeEligibilityUpdateRequest{NodeID: "n1",
			Eligibility: api.NodeSchedulingIneligible}, nil},
		{"deployment upsert", DeploymentUpsertType, DeploymentUpsertRequest{
			Deployment: &api.Deployment{ID: "d1", JobID: "web", JobVersion: 0}}, func(t *testing.T) {
			if d, _ := st().DeploymentByID(nil, "d1"); d == nil {
				t.Error("deployment missing")
			}
		}},
		{"job stability", JobStabilityType, JobStabilityRequest{JobID: "web", Version: 0, Stable: true},
			func(t *testing.T) {
				if j, _ := st().JobByID(nil, "", "web"); !j.Stable {
					t.Error("not stable")
				}
			}},
		{"eval update", EvalUpdateType, EvalUpdateRequest{Evals: []*api.Evaluation{eval("e4", "web")}}, nil},
		{"eval delete", EvalDeleteType, EvalDeleteRequest{Evals: []string{"e4"}, Allocs: []string{"a2"}},
			func(t *testing.T) {
				e, _ := st().EvalByID(nil, "e4")
				al, _ := st().AllocByID(nil, "a2")
				if e != nil || al != nil {
					t.Errorf("not deleted: %v %v", e, al)
				}
			}},
		{"job stop", JobDeregisterType, JobDeregisterRequest{JobID: "web", Eval: eval("e5", "web")},
			func(t *testing.T) {
				if j, _ := st().JobByID(nil, "", "web"); j == nil || !j.Stop {
					t.Errorf("job not stopped: %+v", j)
				}
			}},
		{"job purge", JobDeregisterType, JobDeregisterRequest{JobID: "web", Purge: true}, func(t *testing.T) {
			if j, _ := st().JobByID(nil, "", "web"); j != nil {
				t.Error("job not purged")
			}
		}},
		{"node deregister", NodeDeregisterType, NodeDeregisterRequest{NodeIDs: []string{"n1"}}, func(t *testing.T) {
			if n, _ := st().NodeByID(nil, "n1"); n != nil {
				t.Error("node not removed")
			}
		}},
	}
	for _, s := range steps {
		before := f.State().LatestIndex()
		a.mustApply(s.typ, s.body)
		if got := f.State().LatestIndex(); got != a.index || got <= before {
			t.Errorf("%s: latest index %d, want %d", s.name, got, a.index)
		}
		if s.check != nil {
			t.Run(s.name, s.check)
		}
	}
	if got, want := len(hooks.evals), 6; got != want { // e1, plan e1, e2, e3, e4, e5
		t.Errorf("eval hooks: got %v", hooks.evals)
	}
	if len(hooks.allocs) < 4 || len(hooks.nodes) < 4 {
		t.Errorf("hooks: allocs %v nodes %v", hooks.allocs, hooks.nodes)
	}
}

func TestApplyErrors(t *testing.T) {
	f := New(Config{})
	a := &applier{t: t, f: f}
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, api.ErrBadRequest},
		{"unknown type", []byte{200, '{', '}'}, ErrUnknownType},
		{"bad json", []byte{byte(JobRegisterType), '{'}, api.ErrBadRequest},
		{"future version", append([]byte{byte(EvalUpdateType)}, `{"Version":9,"Body":{}}`...), ErrUnsupportedVersion},
		{"bad body", append([]byte{byte(EvalUpdateType)}, `{"Version":1,"Body":{"Evals":7}}`...), api.ErrBadRequest},
		{"job without ID", mustEncode(t, JobRegisterType, JobRegisterRequest{Job: &api.Job{}}), api.ErrInvalidJob},
		{"missing job", mustEncode(t, JobRegisterType, JobRegisterRequest{}), api.ErrInvalidJob},
		{"deregister missing", mustEncode(t, JobDeregisterType, JobDeregisterRequest{JobID: "x"}), api.ErrJobNotFound},
		{"status of missing node", mustEncode(t, NodeStatusUpdateType, NodeStatusUpdateRequest{NodeID: "x",
			Status: api.NodeStatusDown}), api.ErrNodeNotFound},
	}
	for _, tt := range tests {
		a.index++
		resp := f.Apply(&raft.Log{Index: a.index, Type: raft.LogCommand, Data: tt.data})
		err, ok := resp.(error)
		if !ok || !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, resp, tt.want)
		}
	}
	for _, table := range []string{state.TableJobs, state.TableNodes, state.TableAllocs, state.TableEvals} {
		if got := f.State().Index(table); got != 0 {
			t.Errorf("failed applies changed %s: index %d", table, got)
		}
	}
	if got := f.State().LatestIndex(); got != a.index {
		t.Errorf("latest index after failed applies: got %d, want %d (waiters would hang)", got, a.index)
	}
	if _, err := Encode(MessageType(250), nil); !errors.Is(err, ErrUnknownType) {
		t.Errorf("encode unknown: %v", err)
	}
	// Non-command entries are ignored.
	if resp := f.Apply(&raft.Log{Index: 99, Type: raft.LogNoop}); resp != nil {
		t.Errorf("noop: %v", resp)
	}
}

func mustEncode(t *testing.T, typ MessageType, body any) []byte {
	t.Helper()
	b, err := Encode(typ, body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncodeMatchesEnvelope: Encode's hand-built envelope is byte for
// byte what json.Marshal of envelope gives (entries already in Raft logs
// and snapshots decode the same).
func TestEncodeMatchesEnvelope(t *testing.T) {
	body := &JobRegisterRequest{Job: &api.Job{ID: "web", Name: "web \"quoted\" <html>", Type: api.JobTypeService}}
	got, err := Encode(JobRegisterType, body)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(body)
	env, _ := json.Marshal(envelope{Version: CommandVersion, Body: b})
	want := append([]byte{byte(JobRegisterType)}, env...)
	if string(got) != string(want) {
		t.Errorf("Encode = %s\nwant     %s", got, want)
	}
	typ, raw, err := Decode(got)
	if err != nil || typ != JobRegisterType || string(raw) != string(b) {
		t.Errorf("Decode = %v, %s, %v; want %v, %s", typ, raw, err, JobRegisterType, b)
	}
	// Entries not in Encode's exact form still decode (the slow path).
	other := append([]byte{byte(JobRegisterType)}, `{"Body": `+string(b)+`, "Version": 1}`...)
	if typ, raw, err := Decode(other); err != nil || typ != JobRegisterType || string(raw) != string(b) {
		t.Errorf("Decode(reordered) = %v, %s, %v; want %v, %s", typ, raw, err, JobRegisterType, b)
	}
	bad := append([]byte{byte(JobRegisterType)}, envelopeHead+`{"Job":}`+"}"...)
	if _, _, err := Decode(bad); err == nil {
		t.Errorf("Decode(%q): no error", bad)
	}
}
