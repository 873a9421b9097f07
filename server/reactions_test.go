package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/state"
)

type recQueue struct{ got []string }

func (q *recQueue) Enqueue(e *api.Evaluation) { q.got = append(q.got, e.ID) }

type recWaiters struct {
	blocked   []string
	unblocked []string
	untracked []string
	tracked   *api.Evaluation
}

func (w *recWaiters) Block(e *api.Evaluation) { w.blocked = append(w.blocked, e.ID) }
func (w *recWaiters) Unblock(class string, _ uint64) {
	w.unblocked = append(w.unblocked, class)
}
func (w *recWaiters) UnblockAll(uint64) { w.unblocked = append(w.unblocked, "*") }
func (w *recWaiters) Untrack(_, jobID string) *api.Evaluation {
	w.untracked = append(w.untracked, jobID)
	t := w.tracked
	w.tracked = nil
	return t
}

func TestCommitReactorRoutesEvals(t *testing.T) {
	q, w := &recQueue{}, &recWaiters{tracked: &api.Evaluation{ID: "old-blocked"}}
	var obsolete []string
	r := &commitReactor{state: state.NewStateStore, evals: q, blocked: w,
		obsolete: func(e *api.Evaluation) { obsolete = append(obsolete, e.ID) }}
	r.EvalsUpserted([]*api.Evaluation{
		{ID: "p", JobID: "j", Status: api.EvalStatusPending},
		{ID: "b", JobID: "j", Status: api.EvalStatusBlocked},
		{ID: "c", JobID: "j", Status: api.EvalStatusComplete},
		{ID: "d", JobID: "gone", Status: api.EvalStatusPending, TriggeredBy: api.EvalTriggerJobDeregister},
	})
	if !slices.Equal(q.got, []string{"p", "d"}) || !slices.Equal(w.blocked, []string{"b"}) {
		t.Fatalf("broker got %v, tracker got %v", q.got, w.blocked)
	}
	if !slices.Equal(w.untracked, []string{"gone"}) || !slices.Equal(obsolete, []string{"old-blocked"}) {
		t.Fatalf("deregister: untracked %v, cancelled %v", w.untracked, obsolete)
	}
}

func TestCommitReactorWakesOnCapacity(t *testing.T) {
	st := state.NewStateStore()
	ready := &api.Node{ID: "r", ComputedClass: "cr", Status: api.NodeStatusReady, SchedulingEligibility: api.NodeSchedulingEligible}
	down := &api.Node{ID: "d", ComputedClass: "cd", Status: api.NodeStatusDown, SchedulingEligibility: api.NodeSchedulingEligible}
	if err := st.UpsertNode(1, ready); err != nil {
		t.Fatal(err)
	}
	if err := st.UpsertNode(2, down); err != nil {
		t.Fatal(err)
	}
	w := &recWaiters{}
	r := &commitReactor{state: func() *state.StateStore { return st }, evals: &recQueue{}, blocked: w}

	inel := &api.Node{ID: "i", ComputedClass: "ci", Status: api.NodeStatusReady, SchedulingEligibility: api.NodeSchedulingIneligible}
	draining := &api.Node{ID: "x", ComputedClass: "cx", Status: api.NodeStatusReady, SchedulingEligibility: api.NodeSchedulingEligible,
		DrainStrategy: &api.DrainStrategy{}}
	r.NodesUpdated(3, []*api.Node{ready, down, inel, draining})
	if !slices.Equal(w.unblocked, []string{"cr"}) {
		t.Fatalf("node updates woke classes %v, want only the ready eligible node's", w.unblocked)
	}

	w.unblocked = nil
	run := &api.Allocation{ID: "a1", NodeID: "r", DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning}
	stopped := run.Copy()
	stopped.DesiredStatus = api.AllocDesiredStatusStop
	done := stopped.Copy()
	done.ClientStatus = api.AllocClientStatusComplete
	onDown := &api.Allocation{ID: "a2", NodeID: "d", ClientStatus: api.AllocClientStatusRunning}
	lost := onDown.Copy()
	lost.ClientStatus = api.AllocClientStatusLost
	lostOnReady := run.Copy() // marked lost just before its node goes down
	lostOnReady.ClientStatus = api.AllocClientStatusLost
	r.AllocsUpdated(4, []fsm.AllocChange{
		{Before: nil, After: run},     // placed: uses capacity
		{Before: run, After: run},     // no change
		{Before: onDown, After: lost}, // freed, but the node cannot take work
		{Before: run, After: lostOnReady},
	})
	if len(w.unblocked) != 0 {
		t.Fatalf("woke %v without freed capacity on a ready node", w.unblocked)
	}
	r.AllocsUpdated(5, []fsm.AllocChange{{Before: run, After: stopped}})
	r.AllocsUpdated(6, []fsm.AllocChange{{Before: stopped, After: done}})
	if !slices.Equal(w.unblocked, []string{"cr", "cr"}) {
		t.Fatalf("stop and client completion woke %v, want cr twice", w.unblocked)
	}
}

// TestNoHandPlacedReactions keeps the commit reactor the one path from a
// committed change to the broker and the blocked tracker: no other file of
// the server enqueues, blocks or unblocks evals by hand.
func TestNoHandPlacedReactions(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	banned := map[string]map[string]bool{
		"broker":  {"Enqueue": true, "EnqueueAll": true},
		"blocked": {"Block": true, "Unblock": true, "UnblockAll": true},
	}
	fset := token.NewFileSet()
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "reactions.go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if sel.Sel.Name == "enqueueStored" {
				t.Errorf("%s: enqueueStored call: let the commit reactor enqueue", fset.Position(call.Pos()))
			}
			if recv, ok := sel.X.(*ast.SelectorExpr); ok && banned[recv.Sel.Name][sel.Sel.Name] {
				t.Errorf("%s: %s.%s by hand: write the change through Raft and let the commit reactor react",
					fset.Position(call.Pos()), recv.Sel.Name, sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked only %d files: run from the server package directory", checked)
	}
}
