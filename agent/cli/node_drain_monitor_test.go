package cli

import (
	"strings"
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
