package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/drover/drover/api"
)

// TestCLIUsageAllRegions: `usage -region all` asks for region=all, shows
// each row's region, and names a region that did not answer.
func TestCLIUsageAllRegions(t *testing.T) {
	var mu sync.Mutex
	var region string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		region = r.URL.Query().Get("region")
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(&api.UsageResponse{By: "queue", From: 0, To: 3600, Rows: []api.UsageRow{
			{Key: "train", Region: "us", Bucket: 0, GPUSeconds: map[string]float64{"nvidia/gpu/H100": 7200}},
		}, Partial: true, Missing: []string{"eu"}})
	}))
	defer srv.Close()
	code, out, stderr := runCLI(t, "usage", "-address", srv.URL, "-region", "all")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if region != api.RegionAll {
		t.Errorf("region parameter %q, want all", region)
	}
	if !strings.Contains(out, "Region") || !strings.Contains(out, "us") || !strings.Contains(out, "2.000") {
		t.Errorf("output lacks the region column or the row:\n%s", out)
	}
	if !strings.Contains(out, "partial: region eu did not answer") {
		t.Errorf("output lacks the partial line:\n%s", out)
	}
	if code, _, _ := runCLI(t, "usage", "-address", srv.URL, "-region", "all", "-csv"); code != ExitUsage {
		t.Errorf("-csv with -region all: exit %d, want %d", code, ExitUsage)
	}
}

// TestCLIQueueListAllRegions: `queue list -region all` shows each
// region's queues and names a region that did not answer.
func TestCLIQueueListAllRegions(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("region") != api.RegionAll {
			http.Error(w, `{"error":{"code":"bad_request","message":"want region=all"}}`, http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(&api.QueueStatusesAll{Queues: []*api.QueueStatus{
			{Region: "eu", Queue: &api.Queue{Name: "train"}}, {Region: "us", Queue: &api.Queue{Name: "infer"}},
		}, Partial: true, Missing: []string{"ap"}})
	}))
	defer srv.Close()
	code, out, stderr := runCLI(t, "queue", "list", "-address", srv.URL, "-region", "all")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"Region", "eu", "train", "us", "infer", "partial: region ap did not answer"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
