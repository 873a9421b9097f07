package server

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// TestIdleGPUReclaimStop: allocs report their GPUs idle since 90 minutes
// ago; with idle_timeout 2h nothing happens yet. Once the fake clock
// passes 2h, the reclaimer stops the alloc of the queue whose idle_action
// is stop ("idle GPU reclaim") and only flags the one of the flag queue;
// a busy alloc of the stop queue runs on.
func TestIdleGPUReclaimStop(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	clk := clock.NewFake(t0)
	s := newTestServer(t, withClock(clk), func(c *Config) { c.HeartbeatTTLMin = 24 * time.Hour })
	ctx := context.Background()
	if _, err := s.Tenancy().UpsertQueues(ctx, []*api.Queue{
		{Name: "nb", IdleTimeout: 2 * time.Hour, IdleAction: api.IdleActionStop},
		{Name: "fl", IdleTimeout: 2 * time.Hour, IdleAction: api.IdleActionFlag},
	}); err != nil {
		t.Fatalf("queues: %v", err)
	}
	registerNode(t, s, defragGPUNode("n1", 8))
	var allocs []*api.Allocation
	for _, j := range []struct{ id, queue string }{{"idle-nb", "nb"}, {"idle-fl", "fl"}, {"busy-nb", "nb"}} {
		job := defragGPUJob(j.id, 1)
		job.Queue = j.queue
		registerJob(t, s, job)
		allocs = append(allocs, waitLive(t, s, j.id, 1)[0])
	}
	idleSince := t0.Add(-90 * time.Minute).UnixNano()
	var ups []*api.Allocation
	for i, a := range allocs {
		u := &api.GPUUsage{GPUs: 1, SampledAt: t0.UnixNano(), IdleSince: idleSince}
		if i == 2 {
			u.UtilPercent, u.IdleSince = 60, 0
		}
		ups = append(ups, &api.Allocation{ID: a.ID, ClientStatus: api.AllocClientStatusRunning, GPUUsage: u})
	}
	if _, err := s.Nodes().UpdateAllocsFromClient(ctx, "n1", "secret-n1", ups); err != nil {
		t.Fatalf("client update: %v", err)
	}
	if cur, _ := s.State().AllocByID(nil, allocs[0].ID); cur.GPUUsage == nil || cur.GPUUsage.IdleSince != idleSince {
		t.Fatalf("stored GPU usage = %+v, want idle since %d", cur.GPUUsage, idleSince)
	}

	r := &idleReclaimer{serverCore: s.core.named("idlereclaim"), pending: map[string]bool{}}
	if err := r.round(ctx); err != nil {
		t.Fatalf("round: %v", err)
	}
	waitIdle(t, s)
	for _, a := range allocs {
		if cur, _ := s.State().AllocByID(nil, a.ID); cur.TerminalStatus() {
			t.Fatalf("alloc of %s stopped after 1h30m idle, timeout 2h", a.JobID)
		}
	}

	clk.Advance(31 * time.Minute) // the leader's reclaimer runs (every minute)
	waitState(t, s, "idle alloc stopped", func(ws memdb.WatchSet) (bool, error) {
		cur, err := s.State().AllocByID(ws, allocs[0].ID)
		return cur != nil && cur.DesiredStatus == api.AllocDesiredStatusStop, err
	})
	waitIdle(t, s)
	if cur, _ := s.State().AllocByID(nil, allocs[0].ID); cur.DesiredDescription != api.IdleReclaimDescription {
		t.Errorf("stop reason = %q, want %q", cur.DesiredDescription, api.IdleReclaimDescription)
	}
	for _, a := range allocs[1:] {
		if cur, _ := s.State().AllocByID(nil, a.ID); cur.TerminalStatus() {
			t.Errorf("alloc of %s stopped (%q), want running", a.JobID, cur.DesiredDescription)
		}
	}
}

func TestIdleTimeoutResolution(t *testing.T) {
	q := &api.Queue{Name: "q", IdleTimeout: 3 * time.Hour}
	tg := &api.TaskGroup{Name: "g"}
	job := &api.Job{TaskGroups: []*api.TaskGroup{tg}}
	if got := api.IdleTimeout(job, tg, q); got != 3*time.Hour {
		t.Errorf("queue only: %v, want 3h", got)
	}
	job.IdleTimeout = 2 * time.Hour
	if got := api.IdleTimeout(job, tg, q); got != 2*time.Hour {
		t.Errorf("job over queue: %v, want 2h", got)
	}
	tg.IdleTimeout = time.Hour
	if got := api.IdleTimeout(job, tg, q); got != time.Hour {
		t.Errorf("group over job: %v, want 1h", got)
	}
	now := time.Unix(10_000, 0)
	a := &api.Allocation{DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning,
		GPUUsage: &api.GPUUsage{IdleSince: now.Add(-2 * time.Hour).UnixNano()}}
	if d, idle := a.GPUIdle(time.Hour, now); !idle || d != 2*time.Hour {
		t.Errorf("idle 2h, timeout 1h: %v %v", d, idle)
	}
	if _, idle := a.GPUIdle(3*time.Hour, now); idle {
		t.Error("idle 2h, timeout 3h: flagged")
	}
	if _, idle := a.GPUIdle(0, now); idle {
		t.Error("no timeout: flagged")
	}
	a.GPUUsage.IdleSince = 0
	if _, idle := a.GPUIdle(time.Hour, now); idle {
		t.Error("busy: flagged")
	}
}
