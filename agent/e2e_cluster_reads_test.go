package agent_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// TestClusterReadYourWrites: a write acknowledged by a follower is visible
// at once to a plain read on that follower (the read is answered by the
// leader, as in Nomad), every time; ?stale reads are answered by the
// follower itself, also while the leader is gone.
func TestClusterReadYourWrites(t *testing.T) {
	servers := startCluster(t, nil)
	leader := waitOneLeader(t, 15*time.Second, servers)
	var f *clusterServer
	for _, s := range servers {
		if s != leader {
			f = s
			break
		}
	}
	const n = 100
	bad := 0
	for i := range n {
		id := fmt.Sprintf("ryw-%03d", i)
		if code := putJob(t, f.base, id); code != 200 {
			t.Fatalf("register %s on follower %s = %d, want 200", id, f.name, code)
		}
		var j api.Job
		code, h := getJSON(f.base+"/v1/job/"+id, &j)
		if code != 200 || j.ID != id {
			bad++
			if bad <= 5 {
				t.Errorf("try %d: plain read of %s on %s right after its write = %d %q, want 200 with the job", i, id, f.name, code, j.ID)
			}
			continue
		}
		if h.Get(api.HeaderKnownLeader) != "true" {
			t.Errorf("try %d: %s = %q, want true", i, api.HeaderKnownLeader, h.Get(api.HeaderKnownLeader))
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d plain reads on the follower missed the write it acknowledged", bad, n)
	}

	// ?stale is served locally: with the leader gone, the follower still
	// answers from its own state (once it has applied the last write).
	waitFor(t, 10*time.Second, "the last write applied on "+f.name, func() (bool, string) {
		code, _ := getJSON(f.base+fmt.Sprintf("/v1/job/ryw-%03d?stale", n-1), nil)
		return code == 200, fmt.Sprint(code)
	})
	leader.stop(t)
	var stubs []*api.JobListStub
	code, h := getJSON(f.base+"/v1/jobs?stale", &stubs)
	if code != 200 || len(stubs) != n {
		t.Fatalf("stale list on %s with the leader gone = %d, %d jobs, want 200 with %d", f.name, code, len(stubs), n)
	}
	if h.Get(api.HeaderLastContact) == "" || h.Get(api.HeaderIndex) == "" {
		t.Errorf("stale read headers: last contact %q, index %q, want both", h.Get(api.HeaderLastContact), h.Get(api.HeaderIndex))
	}
	var ids []string
	for _, s := range stubs {
		ids = append(ids, s.ID)
	}
	if !slices.Contains(ids, "ryw-000") {
		t.Errorf("stale list = %v, want ryw-000 among them", ids)
	}
}
