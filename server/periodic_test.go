package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

func TestPeriodicLaunchesChildren(t *testing.T) {
	clk := clock.NewFake(testT0) // 12:00:00
	s := newTestServer(t, withClock(clk), func(c *Config) { c.HeartbeatTTLMin = 24 * time.Hour })
	registerNode(t, s, testNode("a", 4000, 8192))
	job := testJob("report", 1, 100, 64)
	job.Type = api.JobTypeBatch
	job.Periodic = &api.PeriodicConfig{Enabled: true, Spec: "*/5 * * * *", ProhibitOverlap: true}
	resp := registerJob(t, s, job)
	if resp.EvalID != "" {
		t.Fatalf("periodic template got an eval %s", resp.EvalID)
	}
	childID := fmt.Sprintf("report/periodic-%d", testT0.Add(5*time.Minute).Unix())
	children := func(ws memdb.WatchSet) ([]*api.Job, error) {
		return s.State().Jobs(ws, api.DefaultNamespace, "report/periodic-")
	}
	if got, _ := children(nil); len(got) != 0 {
		t.Fatalf("children before the first launch: %d", len(got))
	}
	clk.Advance(4 * time.Minute)
	if got, _ := children(nil); len(got) != 0 {
		t.Fatalf("launched early: %d children", len(got))
	}
	clk.Advance(time.Minute)
	waitState(t, s, "first child", func(ws memdb.WatchSet) (bool, error) {
		j, err := s.State().JobByID(ws, api.DefaultNamespace, childID)
		return j != nil && j.ParentID == "report" && j.Periodic == nil, err
	})
	live := waitLive(t, s, childID, 1)

	// The child still runs at 12:10: with prohibit_overlap the launch is
	// recorded stopped and places nothing.
	clk.Advance(5 * time.Minute)
	second := fmt.Sprintf("report/periodic-%d", testT0.Add(10*time.Minute).Unix())
	waitState(t, s, "second launch recorded", func(ws memdb.WatchSet) (bool, error) {
		j, err := s.State().JobByID(ws, api.DefaultNamespace, second)
		return j != nil && j.Stop, err
	})
	if got, _ := liveAllocs(s, nil, second); len(got) != 0 {
		t.Fatalf("overlapping child placed %d allocs", len(got))
	}
	// The first child finishes; the 12:15 launch runs.
	reportAllocs(t, s, "a", api.AllocClientStatusComplete, live[0])
	waitState(t, s, "first child dead", func(ws memdb.WatchSet) (bool, error) {
		j, err := s.State().JobByID(ws, api.DefaultNamespace, childID)
		return j != nil && j.Status == api.JobStatusDead, err
	})
	clk.Advance(5 * time.Minute)
	third := fmt.Sprintf("report/periodic-%d", testT0.Add(15*time.Minute).Unix())
	waitLive(t, s, third, 1)
}
