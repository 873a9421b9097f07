package agent_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// spillGang is a gang of 2 raw_exec members of cpu MHz each that may
// spill from eu to us after 5 s pending.
func spillGang(id string, cpu int) *api.Job {
	j := rawJob(id, 2)
	j.Type = api.JobTypeBatch
	j.Gang = &api.Gang{Min: 2}
	j.TaskGroups[0].Tasks[0].Resources.CPU = cpu
	j.Placement = &api.Placement{Regions: []string{"eu", "us"}, Mode: api.PlacementSpill, SpillAfter: 5 * time.Second}
	return j
}

// TestE2ESpill: two regions on loopback (real processes, mutual TLS),
// a client each. A gang that fits in its home region eu runs there and
// stays; a gang that does not fit in eu (a filler holds its CPU) spills
// to us after spill_after: it runs in us, marked as from eu, and eu keeps
// it stopped with where it went and why (job status says so).
func TestE2ESpill(t *testing.T) {
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the client role needs root outside CI")
	}
	fc := startFederation(t, []string{"eu", "us"}, nil, "eu", "us")
	eu, us := fc.api(t, fc.servers["eu"][0], ""), fc.api(t, fc.servers["us"][0], "")
	ctx := context.Background()

	// eu's node: what it can give (the same host as us's).
	var free int
	testproc.Eventually(t, 60*time.Second, "eu's client node ready", func() bool {
		nodes, _, err := eu.Nodes(ctx, nil)
		if err != nil || len(nodes) != 1 || nodes[0].Status != api.NodeStatusReady {
			return false
		}
		n, _, err := eu.Node(ctx, nodes[0].ID, nil)
		if err != nil || n.NodeResources == nil {
			return false
		}
		free = int(n.NodeResources.Cpu.CpuShares)
		if r := n.ReservedResources; r != nil {
			free -= int(r.Cpu.CpuShares)
		}
		return free > 1000
	})

	// Room at home: runs in eu.
	if _, err := eu.RegisterJob(ctx, &api.JobRegisterRequest{Job: spillGang("fits", 50)}, nil); err != nil {
		t.Fatalf("register fits: %v", err)
	}
	waitJobRunning(t, eu, "fits", 2)

	// Home full: the filler leaves 100 MHz, the gang wants 2 x 300.
	filler := rawJob("filler", 1)
	filler.TaskGroups[0].Tasks[0].Resources.CPU = free - 100 - 100
	if _, err := eu.RegisterJob(ctx, &api.JobRegisterRequest{Job: filler}, nil); err != nil {
		t.Fatalf("register filler: %v", err)
	}
	waitJobRunning(t, eu, "filler", 1)
	if _, err := eu.RegisterJob(ctx, &api.JobRegisterRequest{Job: spillGang("big", 300)}, nil); err != nil {
		t.Fatalf("register big: %v", err)
	}

	// The leader looks every 30 s: big spills within a minute and a half.
	waitJobRunning(t, us, "big", 2)
	moved, _, err := us.Job(ctx, "big", nil)
	if err != nil || moved.Meta[api.MetaSpilledFrom] != "eu" {
		t.Fatalf("big in us: %v, meta %v; want spilled from eu", err, moved.Meta)
	}
	testproc.Eventually(t, 30*time.Second, "big stopped in eu", func() bool {
		j, _, err := eu.Job(ctx, "big", nil)
		return err == nil && j.Stop && j.Meta[api.MetaSpilledTo] == "us"
	})
	out, err := fc.cli(t, fc.servers["eu"][0], "job", "status", "big")
	if err != nil || !strings.Contains(out, "Spilled to us: no room in eu") || !strings.Contains(out, "us fits now") {
		t.Errorf("job status big in eu: %v\n%s", err, out)
	}

	// The global views through eu, under mTLS: both regions answer (the
	// ledger of eu has rows of filler and fits).
	out, err = fc.cli(t, fc.servers["eu"][0], "usage", "-region", "all")
	if err != nil || !strings.Contains(out, "Region") || !strings.Contains(out, "\neu ") || strings.Contains(out, "partial") {
		t.Errorf("usage -region all: %v\n%s", err, out)
	}
	var qs api.QueueStatusesAll
	all := fc.api(t, fc.servers["eu"][0], api.RegionAll)
	if _, err := all.Query(ctx, "/v1/queues", &qs, nil); err != nil || qs.Partial {
		t.Errorf("queues of every region: %v, partial %v missing %v; want both regions", err, qs.Partial, qs.Missing)
	}

	// fits, placed at home, never moved (the round that moved big saw it).
	if _, _, err := us.Job(ctx, "fits", nil); errCode(err) != api.ErrJobNotFound.Code {
		t.Errorf("fits in us: %v, want job_not_found", err)
	}
	waitJobRunning(t, eu, "fits", 2)
}
