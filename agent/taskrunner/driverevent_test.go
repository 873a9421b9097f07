package taskrunner

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/api"
)

func TestParseTaskID(t *testing.T) {
	for _, tc := range []struct {
		id, alloc, task string
		ok              bool
	}{
		{"a1b2/web/0f0f0f0f", "a1b2", "web", true},
		{"a1b2/web/x/0f0f0f0f", "a1b2", "web/x", true},
		{"a1b2/web", "", "", false},
		{"/web/0f", "", "", false},
		{"a1b2//0f", "", "", false},
		{"a1b2/web/", "", "", false},
		{"plain", "", "", false},
	} {
		alloc, task, ok := ParseTaskID(tc.id)
		if alloc != tc.alloc || task != tc.task || ok != tc.ok {
			t.Errorf("ParseTaskID(%q) = %q, %q, %v; want %q, %q, %v", tc.id, alloc, task, ok, tc.alloc, tc.task, tc.ok)
		}
	}
}

// TestDriverProgressCoalesced: a run of driver progress messages of one
// kind is one event (the latest, with a count), so many image progress
// messages do not push "Received" and "Task Setup" out of the bounded list.
func TestDriverProgressCoalesced(t *testing.T) {
	tr := New(Config{Alloc: &api.Allocation{ID: "a1", TaskGroup: "g"}, Task: &api.Task{Name: "web", Driver: "containerd"}})
	tr.emit(&api.TaskEvent{Type: api.TaskReceived, Message: "Task received by client"})
	tr.emit(&api.TaskEvent{Type: api.TaskSetup, Message: "Building Task Directory"})
	tr.DriverEvent("pulling image docker.io/library/busybox:latest", time.Unix(1, 0))
	for i := range 30 {
		tr.DriverEvent(fmt.Sprintf("pulling layer %012d (%d bytes)", i, 1000+i), time.Unix(int64(2+i), 0))
	}
	tr.DriverEvent("pulled image docker.io/library/busybox:latest in 2s", time.Unix(40, 0))
	tr.emit(&api.TaskEvent{Type: api.TaskStarted, Message: "Task started by client"})

	var got []string
	for _, e := range tr.State().Events {
		got = append(got, e.Type+": "+e.Message)
	}
	want := []string{
		"Received: Task received by client",
		"Task Setup: Building Task Directory",
		"Driver: pulling image docker.io/library/busybox:latest",
		"Driver: pulling layer 000000000029 (1029 bytes)",
		"Driver: pulled image docker.io/library/busybox:latest in 2s",
		"Started: Task started by client",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	layer := tr.State().Events[3]
	if layer.Details[eventCountDetail] != "30" || layer.Time != time.Unix(31, 0).UnixNano() {
		t.Errorf("coalesced event details %v time %d, want count 30 and the latest time", layer.Details, layer.Time)
	}

	// The cap still holds for events that do not coalesce.
	for i := range 2 * MaxEvents {
		tr.emit(&api.TaskEvent{Type: api.TaskRestarting, Message: fmt.Sprintf("restart %d", i)})
	}
	if n := len(tr.State().Events); n != MaxEvents {
		t.Errorf("%d events kept, want the cap %d", n, MaxEvents)
	}
}
