package cli

import (
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// job status shows a pending gang's reservation under its blocked eval.
func TestJobStatusReservationLine(t *testing.T) {
	job := &api.Job{ID: "train", Name: "train", Type: api.JobTypeBatch, Priority: 70, Status: "pending"}
	blocked := &api.Evaluation{ID: "0123456789abcdef", Status: api.EvalStatusBlocked, JobID: "train",
		Reservation: &api.Reservation{JobID: "train", Priority: 70, Groups: []string{"workers"},
			Nodes: []*api.ReservedNode{{NodeID: "aaaaaaaa-1111", Members: 1}, {NodeID: "bbbbbbbb-2222", Members: 1}}}}
	var out strings.Builder
	printJobStatus(&out, job, nil, nil, []*api.Evaluation{blocked})
	want := "Reservation: 2 nodes held for group workers (priority 70): aaaaaaaa, bbbbbbbb"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("job status:\n%s\nwant the line %q", out.String(), want)
	}
	out.Reset()
	blocked.Reservation = nil
	printJobStatus(&out, job, nil, nil, []*api.Evaluation{blocked})
	if strings.Contains(out.String(), "Reservation") {
		t.Fatalf("job status without a reservation:\n%s", out.String())
	}
}
