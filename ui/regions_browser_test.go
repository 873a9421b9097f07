package ui_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover/drover/api"
	"github.com/drover/drover/ui"
)

// TestUIGlobalViewsAndSpill drives the Queues and Usage pages with "All
// regions" (GET ...?region=all: each queue named with its region, a
// partial notice for a region that did not answer) and a job page that
// says where the job spilled and why, against fixed API answers.
func TestUIGlobalViewsAndSpill(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.Handler())
	answer := func(w http.ResponseWriter, r *http.Request, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Drover-Index", "5")
		if r.URL.Query().Get("index") != "" { // a blocking query: nothing changes
			<-r.Context().Done()
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /v1/queues", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("region") != api.RegionAll {
			answer(w, r, []*api.QueueStatus{{Queue: &api.Queue{Name: "train"}}})
			return
		}
		answer(w, r, &api.QueueStatusesAll{Queues: []*api.QueueStatus{
			{Region: "eu", Queue: &api.Queue{Name: "train"}, Allocated: api.QueueResources{GPUs: 8}},
			{Region: "us", Queue: &api.Queue{Name: "train"}, Allocated: api.QueueResources{GPUs: 16}},
		}, Partial: true, Missing: []string{"ap"}})
	})
	mux.HandleFunc("GET /v1/usage", func(w http.ResponseWriter, r *http.Request) {
		resp := &api.UsageResponse{By: api.UsageByQueue}
		if r.URL.Query().Get("region") == api.RegionAll {
			now := time.Now().Unix() / 3600 * 3600
			resp.Rows = []api.UsageRow{
				{Region: "eu", Key: "train", Bucket: now, GPUSeconds: map[string]float64{"nvidia/gpu/H100": 3600}},
				{Region: "us", Key: "train", Bucket: now, GPUSeconds: map[string]float64{"nvidia/gpu/H100": 7200}},
			}
			resp.Partial, resp.Missing = true, []string{"ap"}
		}
		answer(w, r, resp)
	})
	job := &api.Job{ID: "train", Name: "train", Namespace: "default", Type: api.JobTypeBatch, Status: api.JobStatusDead, Stop: true,
		Meta:       map[string]string{api.MetaSpilledTo: "us", api.MetaSpillReason: "no room in eu for 5m0s (gang of 4 x 8 GPUs); us fits now"},
		TaskGroups: []*api.TaskGroup{{Name: "w", Count: 4, Tasks: []*api.Task{{Name: "t", Driver: "exec"}}}}}
	mux.HandleFunc("GET /v1/job/train", func(w http.ResponseWriter, r *http.Request) { answer(w, r, job) })
	for _, p := range []string{"allocations", "evaluations"} {
		mux.HandleFunc("GET /v1/job/train/"+p, func(w http.ResponseWriter, r *http.Request) { answer(w, r, []any{}) })
	}
	mux.HandleFunc("GET /v1/job/train/versions", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, map[string]any{"Versions": []*api.Job{job}})
	})
	mux.HandleFunc("GET /v1/job/train/summary", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, map[string]any{"JobID": "train", "Summary": map[string]any{}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx, problems := browser(t)
	const long = 30 * time.Second

	do(t, ctx, "open queues", chromedp.Navigate(srv.URL+"/ui/queues"), chromedp.WaitVisible(chromedp.ID("queues-table")))
	until(t, ctx, "one region's queue", `document.querySelectorAll('#queues-table tr[data-queue]').length === 1`, long)
	click(t, ctx, "all regions", "#queues-all-regions")
	until(t, ctx, "both regions' queues", `document.querySelectorAll('#queues-table tr[data-queue="train"]').length === 2`, long)
	until(t, ctx, "us queue named with its region", textHas(`#queues-table tr[data-region="us"]`, "us: train"), long)
	until(t, ctx, "partial notice", textHas("#queues-partial", "partial: region ap did not answer"), long)
	until(t, ctx, "region=all in the URL", `location.search.includes('region=all')`, long)

	do(t, ctx, "open usage", chromedp.Navigate(srv.URL+"/ui/usage?region=all"), chromedp.WaitVisible(chromedp.ID("usage")))
	until(t, ctx, "usage per region", textHas("#usage-table", "us: train")+" && "+textHas("#usage-table", "eu: train"), long)
	until(t, ctx, "usage partial notice", textHas("#usage-partial", "partial: region ap did not answer"), long)
	until(t, ctx, "no CSV over every region", `document.querySelector('#usage-csv').hidden`, long)

	do(t, ctx, "open job", chromedp.Navigate(srv.URL+"/ui/jobs/train"), chromedp.WaitVisible(chromedp.ID("job")))
	until(t, ctx, "spill notice", textHas("#job-spill", "Spilled to us: no room in eu for 5m0s (gang of 4 x 8 GPUs); us fits now"), long)
	if p := problems(); len(p) > 0 {
		t.Errorf("page problems:\n%s", strings.Join(p, "\n"))
	}
}
