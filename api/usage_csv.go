package api

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"
)

// UsageCSVColumns are the fixed leading columns of the usage CSV
// (GET /v1/usage?format=csv, drover usage -csv): the row's key, its
// bucket (Unix seconds and RFC3339, UTC), its GPU-seconds over all
// models, CPU-core-seconds, memory GiB-seconds and cost. One column
// "gpu_seconds:MODEL" per GPU model in the response follows, sorted by
// model. One line per UsageRow, in the response's order.
var UsageCSVColumns = []string{"key", "bucket", "start", "gpu_seconds", "cpu_core_seconds", "memory_gib_seconds", "cost"}

// GPUSecondsTotal is the row's GPU-seconds summed over models.
func (r *UsageRow) GPUSecondsTotal() float64 {
	var s float64
	for _, v := range r.GPUSeconds {
		s += v
	}
	return s
}

// WriteUsageCSV writes resp as CSV (see UsageCSVColumns).
func WriteUsageCSV(w io.Writer, resp *UsageResponse) error {
	models := map[string]bool{}
	for _, r := range resp.Rows {
		for m := range r.GPUSeconds {
			models[m] = true
		}
	}
	ms := slices.Sorted(maps.Keys(models))
	cw := csv.NewWriter(w)
	head := append([]string(nil), UsageCSVColumns...)
	for _, m := range ms {
		head = append(head, "gpu_seconds:"+m)
	}
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("write usage csv: %w", err)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, r := range resp.Rows {
		line := []string{r.Key, strconv.FormatInt(r.Bucket, 10), time.Unix(r.Bucket, 0).UTC().Format(time.RFC3339),
			f(r.GPUSecondsTotal()), f(r.CPUCoreSeconds), f(r.MemoryGiBSeconds), f(r.Cost)}
		for _, m := range ms {
			line = append(line, f(r.GPUSeconds[m]))
		}
		if err := cw.Write(line); err != nil {
			return fmt.Errorf("write usage csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write usage csv: %w", err)
	}
	return nil
}

// Usage reads the usage ledger (GET /v1/usage) grouped by by (UsageByQueue,
// UsageByNamespace or UsageByJob; "" is by queue) from from to to (Unix
// seconds or RFC3339; "" for the server's defaults: the last 24 hours).
func (c *Client) Usage(ctx context.Context, by, from, to string) (*UsageResponse, error) {
	p := map[string]string{}
	for k, v := range map[string]string{"by": by, "from": from, "to": to} {
		if v != "" {
			p[k] = v
		}
	}
	var out UsageResponse
	if _, err := c.Query(ctx, "/v1/usage", &out, &QueryOptions{Params: p}); err != nil {
		return nil, err
	}
	return &out, nil
}
