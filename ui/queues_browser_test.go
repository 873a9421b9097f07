package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/ui"
)

// fixtureAPI serves the UI and fixed answers for the routes the Queues,
// Usage and job pages read: GET /v1/queues ([]api.QueueStatus), GET
// /v1/usage (api.UsageResponse, or CSV with format=csv; a 30-day range
// or longer is never answered, to see it aborted), and a pending job whose eval
// carries structured why-pending reasons. Blocking queries (index=) are
// held until the client goes away, and every request the client aborts
// is counted by path.
type fixtureAPI struct {
	*httptest.Server
	aborted   map[string]*atomic.Int64
	usageFrom atomic.Int64
	usageTo   atomic.Int64
}

var fixtureQueues = []*api.QueueStatus{
	{Queue: &api.Queue{Name: "default"}, Allocated: api.QueueResources{CPU: 500, MemoryMB: 256}, RunningAllocs: 1},
	{Queue: &api.Queue{Name: "team-a", Description: "research", Weight: 2,
		Guaranteed: &api.QueueResources{GPUs: 16, CPU: 32000, MemoryMB: 131072}, Limit: &api.QueueResources{GPUs: 16}},
		FairShare:   &api.QueueResources{GPUs: 20, CPU: 40000, MemoryMB: 163840},
		Allocated:   api.QueueResources{GPUs: 16, GPUsByModel: map[string]float64{"nvidia/gpu/H100": 16}, CPU: 16000, MemoryMB: 65536},
		PendingJobs: 3, RunningAllocs: 4},
	{Queue: &api.Queue{Name: "team-a/train", Parent: "team-a", Weight: 1}, Allocated: api.QueueResources{GPUs: 8}, RunningAllocs: 1},
	{Queue: &api.Queue{Name: "team-b", Weight: 1, Guaranteed: &api.QueueResources{GPUs: 8}},
		FairShare: &api.QueueResources{GPUs: 12}, Allocated: api.QueueResources{GPUs: 4}, RunningAllocs: 2},
}

// fixtureUsage: team-a used 8 H100s in each of the range's last 3 hours
// (the last is the hour holding to, which the ledger counts up to now),
// team-b 2 A100s in the last 2.
func fixtureUsage(from, to int64) api.UsageResponse {
	last := (to - 1) / 3600 * 3600
	resp := api.UsageResponse{By: api.UsageByQueue, From: from, To: to}
	for i := int64(0); i < 3; i++ {
		resp.Rows = append(resp.Rows, api.UsageRow{Key: "team-a", Bucket: last - i*3600,
			GPUSeconds: map[string]float64{"nvidia/gpu/H100": 8 * 3600}, CPUCoreSeconds: 16 * 3600, MemoryGiBSeconds: 64 * 3600, Cost: 8 * 2.5})
		if i < 2 {
			resp.Rows = append(resp.Rows, api.UsageRow{Key: "team-b", Bucket: last - i*3600,
				GPUSeconds: map[string]float64{"nvidia/gpu/A100": 2 * 3600}, CPUCoreSeconds: 4 * 3600, MemoryGiBSeconds: 8 * 3600})
		}
	}
	return resp
}

var fixturePending = &api.Evaluation{ID: "0f3c2d1e-0000-4000-8000-000000000001", Namespace: "default", JobID: "big", Status: api.EvalStatusComplete,
	Type: api.JobTypeBatch, TriggeredBy: api.EvalTriggerJobRegister, CreateIndex: 7,
	FailedTGAllocs: map[string]*api.AllocMetric{"train": {
		NodesEvaluated: 1, NodesInPool: 1, NodesExhausted: 1, DimensionExhausted: map[string]int{"devices: nvidia/gpu": 1},
		QuotaExhausted: []string{"queue team-a: gpu 16 of 16 used, 4 more asked"},
		Reasons: []api.PendingReason{
			{Kind: api.PendingQuota, Queue: "team-a", Message: "queue team-a is at its limit: gpu 16 of 16 used, 4 more asked"},
			{Kind: api.PendingDevices, Need: 4, Have: 2, Connected: 1, Node: "g1",
				Message: "needs 4 nvidia/gpu on one node; largest free set is 2 on node g1 (largest NVLink-connected: 1)"}},
		Counterfactuals: []api.Counterfactual{
			{Kind: api.CounterPreempt, Namespace: "default", JobID: "fill", Priority: 40, Node: "g1",
				Blocked: "job fill is only 5 priority below, under 10",
				Message: "would run on node g1 if job fill (priority 40) were preempted; not done: job fill is only 5 priority below, under 10"},
			{Kind: api.CounterJobEnds, Namespace: "default", JobID: "fill", Priority: 40, Node: "g1",
				Message: "would run on node g1 when batch job fill (priority 40) ends"}},
	}}}

func startFixtureAPI(t *testing.T) *fixtureAPI {
	t.Helper()
	f := &fixtureAPI{aborted: map[string]*atomic.Int64{}}
	for _, p := range []string{"/v1/usage", "/v1/job/big"} {
		f.aborted[p] = &atomic.Int64{}
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.Handler())
	answer := func(w http.ResponseWriter, r *http.Request, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Drover-Index", "5")
		if r.URL.Query().Get("index") != "" { // a blocking query: nothing changes
			<-r.Context().Done()
			if c := f.aborted[r.URL.Path]; c != nil {
				c.Add(1)
			}
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /v1/queues", func(w http.ResponseWriter, r *http.Request) { answer(w, r, fixtureQueues) })
	mux.HandleFunc("GET /v1/usage", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		from, err1 := strconv.ParseInt(q.Get("from"), 10, 64)
		to, err2 := strconv.ParseInt(q.Get("to"), 10, 64)
		if err1 != nil || err2 != nil || q.Get("by") != api.UsageByQueue {
			http.Error(w, `{"error":{"code":"bad_request","message":"by=queue&from=&to= (Unix seconds)"}}`, http.StatusBadRequest)
			return
		}
		f.usageFrom.Store(from)
		f.usageTo.Store(to)
		if to-from > 29*24*3600 {
			<-r.Context().Done() // never answered: leaving the page must abort it
			f.aborted["/v1/usage"].Add(1)
			return
		}
		resp := fixtureUsage(from, to)
		if q.Get("format") == "csv" {
			w.Header().Set("Content-Type", "text/csv")
			fmt.Fprintln(w, "key,bucket,gpu_seconds")
			for _, row := range resp.Rows {
				fmt.Fprintf(w, "%s,%d,%.0f\n", row.Key, row.Bucket, row.GPUSeconds["nvidia/gpu/H100"]+row.GPUSeconds["nvidia/gpu/A100"])
			}
			return
		}
		answer(w, r, resp)
	})
	job := &api.Job{ID: "big", Name: "big", Namespace: "default", Type: api.JobTypeBatch, Priority: 45, Status: api.JobStatusPending,
		Datacenters: []string{"dc1"}, Queue: "team-a", TaskGroups: []*api.TaskGroup{{Name: "train", Count: 1,
			Tasks: []*api.Task{{Name: "t", Driver: "raw_exec", Resources: &api.Resources{CPU: 1000, MemoryMB: 1024,
				Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 4}}}}}}}}
	mux.HandleFunc("GET /v1/job/big", func(w http.ResponseWriter, r *http.Request) { answer(w, r, job) })
	mux.HandleFunc("GET /v1/job/big/allocations", func(w http.ResponseWriter, r *http.Request) { answer(w, r, []any{}) })
	mux.HandleFunc("GET /v1/job/big/evaluations", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, []*api.Evaluation{fixturePending})
	})
	mux.HandleFunc("GET /v1/job/big/versions", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, map[string]any{"Versions": []*api.Job{job}})
	})
	mux.HandleFunc("GET /v1/job/big/summary", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, map[string]any{"JobID": "big", "Summary": map[string]any{"train": map[string]int{"Queued": 1}}})
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

// TestUIQueuesUsage drives the Queues and Usage pages and the job page's
// why-pending view in headless Chromium against fixed API answers (the
// JSON shapes of api/usage.go and api/pending.go): the table and bar
// chart per queue, the stacked GPU-hours chart with its totals and CSV
// link, range changes, and requests aborted when the page is left.
func TestUIQueuesUsage(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	f := startFixtureAPI(t)
	ctx, problems := browser(t)
	shot := newShots(t, ctx)
	const long = 30 * time.Second

	// Queues: one row and one chart row per queue, GPUs by default.
	do(t, ctx, "open queues", chromedp.Navigate(f.URL+"/ui/queues"), chromedp.WaitVisible(chromedp.ID("queues-table")))
	until(t, ctx, "four queues listed", `document.querySelectorAll('#queues-table tr[data-queue]').length === 4`, long)
	until(t, ctx, "team-a row", textHas(`#queues-table tr[data-queue="team-a"]`, "16× nvidia/gpu/H100"), long)
	until(t, ctx, "team-a pending jobs", textHas(`#queues-table tr[data-queue="team-a"] .pending`, "3"), long)
	for _, c := range []struct{ series, value string }{{"guaranteed", "16"}, {"fair", "20"}, {"allocated", "16"}} {
		until(t, ctx, "team-a "+c.series+" bar", fmt.Sprintf(`!!document.querySelector('#queues-chart g.row[data-key="team-a"] rect[data-series=%q][data-value=%q]')`, c.series, c.value), long)
	}
	until(t, ctx, "team-a limit tick", `!!document.querySelector('#queues-chart g.row[data-key="team-a"] line[data-series="limit"][data-value="16"]')`, long)
	until(t, ctx, "team-b allocated bar shorter than team-a's",
		`+document.querySelector('#queues-chart g.row[data-key="team-b"] rect[data-series="allocated"]').getAttribute('width') <
		 +document.querySelector('#queues-chart g.row[data-key="team-a"] rect[data-series="allocated"]').getAttribute('width')`, long)
	until(t, ctx, "queues nav highlighted", `document.querySelector('#nav a[data-nav="queues"]').classList.contains('active')`, long)
	shot.take("queues")
	click(t, ctx, "show CPU", `#queues-resource button[data-resource="cpu"]`)
	until(t, ctx, "CPU chart", `!!document.querySelector('#queues-chart g.row[data-key="team-a"] rect[data-series="fair"][data-value="40000"]')`, long)
	until(t, ctx, "resource in the URL", `location.search.includes('resource=cpu')`, long)

	// Usage: the default range is 7 days, drawn daily.
	click(t, ctx, "open usage", `#nav a[data-nav="usage"]`)
	until(t, ctx, "usage table", `document.querySelectorAll('#usage-table tr[data-queue]').length === 2`, long)
	if from, to := f.usageFrom.Load(), f.usageTo.Load(); from%(24*3600) != 0 || to-from <= 6*24*3600 || to-from > 7*24*3600 || to > time.Now().Unix() {
		t.Fatalf("usage asked from=%d to=%d, want 7 UTC days: from a UTC midnight 6 days before today's to now, not later (Unix seconds)", from, to)
	}
	until(t, ctx, "team-a GPU-hours", textHas(`#usage-table tr[data-queue="team-a"] .gpu-hours`, "24.0"), long)
	until(t, ctx, "team-b GPU-hours", textHas(`#usage-table tr[data-queue="team-b"] .gpu-hours`, "4.0"), long)
	until(t, ctx, "daily columns", `document.querySelectorAll('#usage-chart g.col').length === 7 && `+textHas("#usage-span", "daily"), long)
	until(t, ctx, "cost column", textHas(`#usage-table tr[data-queue="team-a"]`, "60.00"), long)
	until(t, ctx, "CSV link", `(() => { const u = new URL(document.querySelector('#usage-csv').href);
		return u.pathname === '/v1/usage' && u.searchParams.get('format') === 'csv' && u.searchParams.get('by') === 'queue' &&
		  +u.searchParams.get('from') % 86400 === 0 && document.querySelector('#usage-csv').hasAttribute('download'); })()`, long)
	csv, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.querySelector('#usage-csv').href).then((r) => r.text())`,
		chromedp.EvalAwaitPromise))
	if err != nil || !strings.HasPrefix(csv, "key,bucket,gpu_seconds\n") || !strings.Contains(csv, "team-a,") {
		t.Fatalf("CSV behind the download link: %q (%v)", csv, err)
	}
	// The last 24 hours, hourly: both queues stack in the last two hours.
	click(t, ctx, "last 24h", `#usage-range button[data-range="24h"]`)
	until(t, ctx, "hourly columns", `document.querySelectorAll('#usage-chart g.col').length === 24 && `+textHas("#usage-span", "hourly"), long)
	until(t, ctx, "stacked columns", `[...document.querySelectorAll('#usage-chart g.col')].filter((c) => c.querySelectorAll('rect').length === 2).length === 2`, long)
	until(t, ctx, "stack order: team-a below team-b", `(() => { const c = [...document.querySelectorAll('#usage-chart g.col')].at(-1);
		const a = c.querySelector('rect[data-series="team-a"]'), b = c.querySelector('rect[data-series="team-b"]');
		return +a.getAttribute('y') > +b.getAttribute('y') && Math.abs(+a.getAttribute('height') - 4 * +b.getAttribute('height')) < 0.01; })()`, long)
	until(t, ctx, "range in the URL", `location.search.includes('range=24h')`, long)
	shot.take("usage")

	// Leaving the page aborts its request in flight (30 days: never answered).
	click(t, ctx, "last 30d", `#usage-range button[data-range="30d"]`)
	testproc.Eventually(t, long, "the 30-day usage request at the fixture", func() bool {
		return f.usageTo.Load()-f.usageFrom.Load() > 29*24*3600
	})
	click(t, ctx, "leave for the job page", `#nav a[data-nav="jobs"]`)
	do(t, ctx, "open the pending job", chromedp.Evaluate[chromedp.Void](`(() => { history.pushState(null, '', '/ui/jobs/big'); dispatchEvent(new PopStateEvent('popstate')); })()`))
	testproc.Eventually(t, long, "usage request aborted", func() bool { return f.aborted["/v1/usage"].Load() != 0 })

	// Why pending on the job page: reasons, then what would let it run.
	until(t, ctx, "quota reason", textHas(`#placement-failures li[data-kind="quota"]`, "queue team-a is at its limit: gpu 16 of 16 used, 4 more asked"), long)
	until(t, ctx, "device reason", textHas(`#placement-failures li[data-kind="devices"]`, "largest free set is 2 on node g1"), long)
	until(t, ctx, "preempt counterfactual", textHas(`#placement-failures .would-run li[data-kind="preempt"]`, "if job fill (priority 40) were preempted"), long)
	until(t, ctx, "job-ends counterfactual links the job", `!!document.querySelector('#placement-failures .would-run li[data-kind="job-ends"] a[href="/ui/jobs/fill"]')`, long)
	until(t, ctx, "the job's queue", textHas("#job-queue", "team-a"), long)
	shot.take("job-why-pending")
	// Leaving the job page aborts its blocking queries.
	click(t, ctx, "back to queues", `#nav a[data-nav="queues"]`)
	testproc.Eventually(t, long, "job blocking query aborted", func() bool { return f.aborted["/v1/job/big"].Load() != 0 })

	for _, p := range problems() {
		t.Errorf("browser: %s", p)
	}
}
