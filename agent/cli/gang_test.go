package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

func TestPrintAllocGang(t *testing.T) {
	a := &api.Allocation{ID: "a1", Name: "train.workers[1]", Gang: &api.AllocGang{ID: "workers", Size: 2, Rank: 1, LeaderAddr: "10.0.0.5:29500"}}
	var b bytes.Buffer
	printAlloc(&b, a, false)
	if want := "Gang                = workers, rank 1 of 2, leader 10.0.0.5:29500"; !strings.Contains(b.String(), want) {
		t.Errorf("alloc status lacks %q:\n%s", want, b.String())
	}
	if strings.Contains(b.String(), "Gang Members") {
		t.Errorf("alloc status without -verbose lists the members:\n%s", b.String())
	}
	a.Gang.Members = []api.GangMember{{Rank: 0, AllocID: "a0000000-1", Name: "train.workers[0]", NodeID: "n0000000-1", Address: "10.0.0.5"},
		{Rank: 1, AllocID: "a1", Name: "train.workers[1]", NodeID: "n1", Address: "10.0.0.6"}}
	b.Reset()
	printAlloc(&b, a, true)
	if want := "Gang Members\nRank  Alloc ID    Name              Node ID     Address\n0     a0000000-1  train.workers[0]  n0000000-1  10.0.0.5\n1     a1          train.workers[1]  n1          10.0.0.6\n"; !strings.Contains(b.String(), want) {
		t.Errorf("alloc status -verbose lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	a.Gang = nil
	printAlloc(&b, a, false)
	if strings.Contains(b.String(), "Gang") {
		t.Errorf("alloc status outside a gang shows a Gang line:\n%s", b.String())
	}
}

// job status lists a job's gangs and, when the gang could not be placed,
// says that it holds nothing while it waits.
func TestPrintJobStatusGang(t *testing.T) {
	job := &api.Job{ID: "train", Name: "train", Type: api.JobTypeBatch, Status: "pending", TaskGroups: []*api.TaskGroup{
		{Name: "workers", Count: 2, Gang: &api.Gang{Timeout: 10 * time.Minute, Topology: &api.Topology{Level: "rack", Mode: api.TopologyRequired}}},
		{Name: "web", Count: 1},
		{Name: "elastic", Count: 8, Gang: &api.Gang{Min: 4}},
	}}
	evals := []*api.Evaluation{{ID: "e1", Status: api.EvalStatusBlocked},
		{ID: "e0", Status: api.EvalStatusComplete, BlockedEval: "e1", FailedTGAllocs: map[string]*api.AllocMetric{
			"workers": {NodesEvaluated: 1, NodesExhausted: 1, CoalescedFailures: 1, DimensionExhausted: map[string]int{"devices": 1},
				GangFailure: "gang workers needs 2 members, 1 fit"},
		}}}
	var b bytes.Buffer
	printJobStatus(&b, job, nil, nil, evals)
	out := b.String()
	for _, want := range []string{
		"Gangs\nGang     Task Groups  Members  Min  Timeout       Topology\n",
		"workers  workers      2        2    10m0s         rack (required)\n",
		"elastic  elastic      8        4    none (waits)  -\n",
		"Task Group \"workers\" (failed to place 2 allocation(s)):\n" +
			"  * gang workers needs 2 members, 1 fit\n" +
			"  * Gang \"workers\" (2 members, min 2) is placed whole or not at all: nothing is held until all fit; placement fails after 10m0s; members must share one \"rack\"\n" +
			"  * Dimension \"devices\" exhausted on 1 nodes\n",
		"No allocations placed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("job status lacks %q:\n%s", want, out)
		}
	}
	// Without the job (eval status) the scheduler's reason still shows.
	if got := strings.Join(failureLines(evals[1].FailedTGAllocs, nil), "\n"); !strings.Contains(got, "(failed to place 2 allocation(s)):\n  * gang workers needs 2 members, 1 fit\n  * Dimension") {
		t.Errorf("failure lines without the job:\n%s", got)
	}
	// A job-wide gang is one row over all its groups.
	job.Gang = &api.Gang{}
	job.TaskGroups[0].Gang, job.TaskGroups[2].Gang = nil, nil
	b.Reset()
	printGangs(&b, job)
	if want := "job   workers,web,elastic  11       11   none (waits)  -"; !strings.Contains(b.String(), want) {
		t.Errorf("job-wide gang row: want %q in\n%s", want, b.String())
	}
	b.Reset()
	printGangs(&b, &api.Job{ID: "plain", TaskGroups: []*api.TaskGroup{{Name: "g", Count: 1}}})
	if b.Len() != 0 {
		t.Errorf("a job without gangs printed %q", b.String())
	}
}

// job status shows each gang's members by rank with node, rack and
// status, the placed size, min and leader address, and its earlier
// attempts with why they ended; a pending gang says what it needs and
// that it holds a reservation.
func TestPrintJobStatusGangMembers(t *testing.T) {
	job := &api.Job{ID: "train", Name: "train", Type: api.JobTypeBatch, Status: "running", TaskGroups: []*api.TaskGroup{
		{Name: "workers", Count: 2, Gang: &api.Gang{}},
		{Name: "ps", Count: 1},
	}}
	g := func(rank int, leader string) *api.AllocGang {
		return &api.AllocGang{ID: "workers", Size: 2, Rank: rank, LeaderAddr: leader}
	}
	at := time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC).UnixNano()
	stopped := &api.AllocListStub{ID: "a1000000-1", EvalID: "e1", Name: "train.workers[1]", NodeID: "n2000000-1", NodeName: "gpu-2", TaskGroup: "workers",
		ClientStatus: api.AllocClientStatusComplete, DesiredStatus: api.AllocDesiredStatusStop, CreateIndex: 10, CreateTime: at, Gang: g(1, "10.0.0.7:29500"),
		DesiredDescription: "gang workers below min for 30s (1 of 2 members running)"}
	allocs := []*api.AllocListStub{
		{ID: "a0000000-1", EvalID: "e1", Name: "train.workers[0]", NodeID: "n3000000-1", NodeName: "gpu-3", TaskGroup: "workers",
			ClientStatus: api.AllocClientStatusFailed, DesiredStatus: api.AllocDesiredStatusRun, CreateIndex: 10, CreateTime: at, Gang: g(0, "10.0.0.7:29500")},
		stopped,
		{ID: "b1000000-1", EvalID: "e2", Name: "train.workers[1]", NodeID: "n2000000-1", NodeName: "gpu-2", TaskGroup: "workers",
			ClientStatus: api.AllocClientStatusRunning, DesiredStatus: api.AllocDesiredStatusRun, CreateIndex: 20, Gang: g(1, "10.0.0.5:29500")},
		{ID: "b0000000-1", EvalID: "e2", Name: "train.workers[0]", NodeID: "n1000000-1", NodeName: "gpu-1", TaskGroup: "workers",
			ClientStatus: api.AllocClientStatusRunning, DesiredStatus: api.AllocDesiredStatusRun, CreateIndex: 20, Gang: g(0, "10.0.0.5:29500")},
		{ID: "c0000000-1", EvalID: "e0", Name: "train.ps[0]", NodeID: "n1000000-1", TaskGroup: "ps",
			ClientStatus: api.AllocClientStatusRunning, DesiredStatus: api.AllocDesiredStatusRun, CreateIndex: 5},
	}
	if got, want := strings.Join(gangNodeIDs(allocs), ","), "n3000000-1,n2000000-1,n1000000-1"; got != want {
		t.Errorf("gang nodes looked up: %s, want %s", got, want)
	}
	racks := map[string]string{"n1000000-1": "r1", "n2000000-1": "r2"}
	var b bytes.Buffer
	printJobStatusRacks(&b, job, nil, allocs, nil, racks)
	out := b.String()
	for _, want := range []string{
		"\nGang \"workers\" (running): 2 placed of 2, min 2, leader 10.0.0.5:29500\n" +
			"Rank  Alloc ID  Name              Node   Rack  Status\n" +
			"0     b0000000  train.workers[0]  gpu-1  r1    running\n" +
			"1     b1000000  train.workers[1]  gpu-2  r2    running\n",
		"\nEarlier Attempts of Gang \"workers\"\n" +
			"Attempt  Placed                Allocs (rank:id)       Outcome               Why It Ended\n" +
			"1        " + fmtUnixNano(at) + "  0:a0000000,1:a1000000  1 failed, 1 complete  gang workers below min for 30s (1 of 2 members running)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("job status lacks\n%s\nin:\n%s", want, out)
		}
	}

	// Pending: nothing placed, a reservation held.
	pending := &api.Job{ID: "queued", Name: "queued", Type: api.JobTypeBatch, Status: "pending", TaskGroups: []*api.TaskGroup{
		{Name: "workers", Count: 4, Gang: &api.Gang{Min: 3}}}}
	evals := []*api.Evaluation{{ID: "e9", Status: api.EvalStatusBlocked, Reservation: &api.Reservation{Groups: []string{"workers"}, Priority: 70,
		Nodes: []*api.ReservedNode{{NodeID: "n1000000-1", Members: 2}, {NodeID: "n2000000-1", Members: 2}}}}}
	b.Reset()
	printJobStatusRacks(&b, pending, nil, nil, evals, nil)
	if want := "\nGang \"workers\" (pending): nothing placed, needs 3 of 4 members at once; holds a reservation on 2 nodes\n"; !strings.Contains(b.String(), want) {
		t.Errorf("pending gang: want %q in\n%s", want, b.String())
	}
	if strings.Contains(b.String(), "Earlier Attempts") {
		t.Errorf("a gang never placed shows earlier attempts:\n%s", b.String())
	}
}
