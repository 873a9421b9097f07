package cli

import (
	"fmt"
	"io"

	"github.com/drover/drover/api"
)

// printSpill shows, in job status, where a job with placement mode spill
// went and why (at home), or where it came from (in the region it moved
// to).
func printSpill(w io.Writer, job *api.Job) {
	if to, reason := job.SpilledTo(); to != "" {
		fmt.Fprintf(w, "\nSpilled to %s: %s\n", to, reason)
		fmt.Fprintf(w, "(drover job status -region %s %s)\n", to, job.ID)
		return
	}
	if from := job.Meta[api.MetaSpilledFrom]; from != "" {
		fmt.Fprintf(w, "\nSpilled from %s (placement mode spill)\n", from)
		return
	}
	if p := job.Placement; p != nil && p.Mode == api.PlacementSpill {
		fmt.Fprintf(w, "\nPlacement: may spill to %v after %s pending\n", p.Regions, p.After())
	}
}
