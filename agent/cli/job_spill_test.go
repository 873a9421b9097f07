package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// TestJobStatusSpill: job status at home says where a spilled job went
// and why; in the region it went to, where it came from.
func TestJobStatusSpill(t *testing.T) {
	home := &api.Job{ID: "train", Stop: true, Status: api.JobStatusDead, Meta: map[string]string{
		api.MetaSpilledTo: "us", api.MetaSpillReason: "no room in eu for 5m0s (gang of 4 x 8 GPUs); us fits now"}}
	var b bytes.Buffer
	printJobStatus(&b, home, nil, nil, nil)
	if want := "Spilled to us: no room in eu for 5m0s (gang of 4 x 8 GPUs); us fits now"; !strings.Contains(b.String(), want) {
		t.Errorf("job status at home:\n%s\nwant %q", b.String(), want)
	}
	b.Reset()
	printJobStatus(&b, &api.Job{ID: "train", Meta: map[string]string{api.MetaSpilledFrom: "eu"}}, nil, nil, nil)
	if !strings.Contains(b.String(), "Spilled from eu") {
		t.Errorf("job status in us:\n%s\nwant \"Spilled from eu\"", b.String())
	}
}
