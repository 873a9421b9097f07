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
