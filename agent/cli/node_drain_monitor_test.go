package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/drover/drover/api"
)

func TestDrainEvents(t *testing.T) {
	yes := true
	run := &api.Allocation{ID: "aaaaaaaa-1", DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusRunning}
	done := &api.Allocation{ID: "bbbbbbbb-1", DesiredStatus: api.AllocDesiredStatusStop, ClientStatus: api.AllocClientStatusComplete}
	seen := map[string]*api.Allocation{}
	if got := drainEvents(seen, []*api.Allocation{run, done}, true); len(got) != 0 {
		t.Errorf("first look: %q, want nothing (no history replayed)", got)
	}
	marked := *run
	marked.DesiredTransition.Migrate = &yes
	stopped := marked
	stopped.DesiredStatus = api.AllocDesiredStatusStop
	finished := stopped
	finished.ClientStatus = api.AllocClientStatusComplete
	for _, step := range []struct {
		a    *api.Allocation
		want []string
	}{
		{&marked, []string{`Alloc "aaaaaaaa" marked for migration`}},
		{&stopped, []string{`Alloc "aaaaaaaa" draining`}},
		{&finished, []string{`Alloc "aaaaaaaa" status running -> complete`}},
		{&finished, nil},
	} {
		got := drainEvents(seen, []*api.Allocation{step.a, done}, false)
		if strings.Join(got, "|") != strings.Join(step.want, "|") {
			t.Errorf("got %q, want %q", got, step.want)
		}
	}
}

// The monitor's two watches answer in either order: when the node's
// drain is over before the allocs' watch reported their last change, the
// monitor still says what the allocs did, before "Drain complete".
func TestMonitorDrainReadsAllocsAtTheEnd(t *testing.T) {
	yes := true
	running := &api.Allocation{ID: "aaaaaaaa-1", DesiredStatus: api.AllocDesiredStatusStop, ClientStatus: api.AllocClientStatusRunning,
		DesiredTransition: api.DesiredTransition{Migrate: &yes}}
	complete := *running
	complete.ClientStatus = api.AllocClientStatusComplete
	allocsBlocked := make(chan struct{}) // the allocs' watch waits on its next change
	var once sync.Once
	var mu sync.Mutex
	plainReads := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(api.HeaderIndex, "10")
		blocking := r.URL.Query().Get("index") != ""
		switch {
		case strings.HasSuffix(r.URL.Path, "/allocations"):
			if blocking {
				once.Do(func() { close(allocsBlocked) })
				<-r.Context().Done() // its answer would come too late
				return
			}
			mu.Lock()
			plainReads++
			first := plainReads == 1
			mu.Unlock()
			if first {
				_ = json.NewEncoder(w).Encode([]*api.Allocation{running})
			} else {
				_ = json.NewEncoder(w).Encode([]*api.Allocation{&complete})
			}
		default: // the node
			n := &api.Node{ID: "node-1", DrainStrategy: &api.DrainStrategy{}}
			if blocking {
				<-allocsBlocked
				n = &api.Node{ID: "node-1", LastDrain: &api.DrainMetadata{Status: api.DrainStatusComplete}}
			}
			_ = json.NewEncoder(w).Encode(n)
		}
	}))
	defer srv.Close()
	var out strings.Builder
	if err := monitorDrain(context.Background(), &out, api.NewClient(srv.URL), "node-1"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	i, j := strings.Index(got, `status running -> complete`), strings.Index(got, "Drain complete")
	if i < 0 || j < 0 || i > j {
		t.Errorf("monitor output:\n%s\nwant the alloc's status change before the drain's end", got)
	}
}
