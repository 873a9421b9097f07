package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/server/autoscale"
	"github.com/drover/drover/server/scheduler"
)

// regProvider boots instantly: Create registers the nodes with the
// server as their clients would.
type regProvider struct {
	s         *Server
	mu        sync.Mutex
	next      int
	live      map[string]string // instance -> pool
	destroyed []string
}

func (p *regProvider) Create(ctx context.Context, pool string, shape autoscale.Shape, n int) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for range n {
		p.next++
		id := fmt.Sprintf("inst-%d", p.next)
		node := shape.Node(fmt.Sprintf("00000000-0000-4000-a000-%012d", p.next), id, pool)
		node.SecretID = "secret-" + node.ID
		if _, err := p.s.Nodes().RegisterNode(ctx, node, api.NodeIntro{}); err != nil {
			return ids, err
		}
		p.live[id] = pool
		ids = append(ids, id)
	}
	return ids, nil
}

func (p *regProvider) Destroy(_ context.Context, ids []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		delete(p.live, id)
		p.destroyed = append(p.destroyed, id)
	}
	return nil
}

func (p *regProvider) List(context.Context) ([]autoscale.Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []autoscale.Instance
	for id, pool := range p.live {
		out = append(out, autoscale.Instance{ID: id, Pool: pool})
	}
	return out, nil
}

func (p *regProvider) Interruptions(context.Context) ([]autoscale.Interruption, error) {
	return nil, nil
}

// The autoscaler on a live server (Raft, workers, drainer, plan applier),
// one pass at a time on the fake clock: pending work grows the pool, a
// spot interruption (the HTTP route's drain) moves the work with the
// reason in the stopped alloc's description, and empty nodes go after
// idle, down to min.
func TestAutoscalerOnServer(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(testT0)
	s := newTestServer(t, withClock(clk))
	prov := &regProvider{s: s, live: map[string]string{}}
	pol := autoscale.Policy{Pool: api.DefaultNodePool, Min: 0, Max: 3, Provider: "reg",
		Shape:    autoscale.Shape{GPUModel: "H100", GPUs: 8, CPU: 16000, MemoryMB: 65536, Spot: true, Price: 20},
		Cooldown: time.Second, ScaleIn: autoscale.ScaleInPolicy{Idle: 2 * time.Second}}
	if err := pol.Validate(); err != nil {
		t.Fatal(err)
	}
	sc := &autoscale.Scaler{Policies: []autoscale.Policy{pol}, Providers: map[string]autoscale.Provider{"reg": prov},
		Cluster: &autoscaleCluster{serverCore: s.core}, Clock: clk, Options: func() scheduler.Options { return scheduler.Options{Now: clk.Now()} }}
	step := func() *autoscale.Report {
		t.Helper()
		rep, err := sc.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}

	// A service job: the drainer migrates it at once (batch work waits
	// for the deadline). The clock moves by less than a heartbeat TTL.
	job := testJob("train", 2, 1000, 1024)
	job.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 8}}
	resp := registerJob(t, s, job)
	waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete)
	waitState(t, s, "a blocked eval", func(ws memdb.WatchSet) (bool, error) {
		_, blocked, err := (&autoscaleCluster{serverCore: s.core}).State()
		return len(blocked) == 1, err
	})
	if rep := step(); len(rep.Created[pol.Pool]) != 2 {
		t.Fatalf("2 allocs of 8 GPUs, no nodes: created %v, want 2", rep.Created)
	}
	allocs := waitLive(t, s, "train", 2)
	for _, a := range allocs {
		reportAllocs(t, s, a.NodeID, api.AllocClientStatusRunning, a)
	}

	// A spot interruption of the first alloc's node, as POST
	// /v1/node/{id}/interrupt does it.
	victim := allocs[0]
	if _, err := s.Nodes().UpdateNodeDrain(ctx, &api.NodeUpdateDrainRequest{NodeID: victim.NodeID,
		DrainSpec: &api.DrainSpec{Deadline: 2 * time.Minute, Reason: api.DrainReasonSpot}}); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, "interrupted alloc stopped with the reason", func(ws memdb.WatchSet) (bool, error) {
		a, err := s.State().AllocByID(ws, victim.ID)
		return a != nil && a.DesiredStatus == api.AllocDesiredStatusStop, err
	})
	stopped, _ := s.State().AllocByID(nil, victim.ID)
	if !strings.Contains(stopped.DesiredDescription, "spot interruption") {
		t.Errorf("stopped alloc's description %q, want the spot interruption reason", stopped.DesiredDescription)
	}
	reportAllocs(t, s, victim.NodeID, api.AllocClientStatusComplete, victim)
	var nblocked int
	waitState(t, s, "the replacement blocked", func(ws memdb.WatchSet) (bool, error) {
		evals, err := s.State().EvalsByJob(ws, api.DefaultNamespace, "train")
		nblocked = 0
		for _, e := range evals {
			if e.Status == api.EvalStatusBlocked {
				nblocked++
			}
		}
		return nblocked > 0, err
	})
	if rep := step(); len(rep.Created[pol.Pool]) != 1 {
		t.Fatalf("replacement: created %v, want 1", rep.Created)
	}
	now := waitLive(t, s, "train", 2)
	for _, a := range now {
		if a.NodeID == victim.NodeID {
			t.Fatalf("alloc %s still on the interrupted node", a.ID)
		}
	}
	// The interrupted node goes once its drain completed (in the pass
	// that bought the replacement, or the next).
	waitState(t, s, "drain of the interrupted node complete", func(ws memdb.WatchSet) (bool, error) {
		n, err := s.State().NodeByID(ws, victim.NodeID)
		return n == nil || n.DrainStrategy == nil, err
	})
	step()
	if n, _ := s.State().NodeByID(nil, victim.NodeID); n != nil || len(prov.destroyed) != 1 {
		t.Fatalf("interrupted node: still registered %v, destroyed %v; want gone, 1 instance", n != nil, prov.destroyed)
	}

	// The job stops: after idle both nodes are drained, then destroyed.
	if _, err := s.Jobs().DeregisterJob(ctx, api.DefaultNamespace, "train", false); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, "the job's allocs stopped", func(ws memdb.WatchSet) (bool, error) {
		live, err := liveAllocs(s, ws, "train")
		return len(live) == 0, err
	})
	for _, a := range now {
		reportAllocs(t, s, a.NodeID, api.AllocClientStatusComplete, a)
	}
	step()
	clk.Advance(3 * time.Second)
	if rep := step(); len(rep.Drained) != 2 {
		t.Fatalf("after idle: drained %v, want 2", rep.Drained)
	}
	waitState(t, s, "drains complete", func(ws memdb.WatchSet) (bool, error) {
		nodes, err := s.State().Nodes(ws, "")
		for _, n := range nodes {
			if n.DrainStrategy != nil {
				return false, err
			}
		}
		return true, err
	})
	step()
	nodes, _ := s.State().Nodes(nil, "")
	if len(nodes) != 0 || len(prov.live) != 0 || len(prov.destroyed) != 3 {
		t.Errorf("after scale-in: %d nodes, live instances %v, destroyed %v; want none, none, 3", len(nodes), prov.live, prov.destroyed)
	}
}

// The duty runs only with policies.
func TestAutoscalerDutyConfigured(t *testing.T) {
	has := func(s *Server) bool {
		return slices.ContainsFunc(s.leaderDuties(time.Time{}), func(d leaderDuty) bool { _, ok := d.(*autoscale.Scaler); return ok })
	}
	if has(newTestServer(t)) {
		t.Error("autoscaler duty without policies")
	}
	s := newTestServer(t, func(c *Config) {
		c.Autoscale = AutoscaleConfig{Policies: []autoscale.Policy{{Pool: "gpu", Max: 1, Provider: "x"}}}
	})
	if !has(s) {
		t.Error("no autoscaler duty with a policy")
	}
}
