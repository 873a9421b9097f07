package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/ui"
)

// gangFixture serves the UI and fixed answers for two namespaces: job
// "web" in default, and in "ml" the gang job "train" (group workers, a
// gang of 2 packed by rack, running its second attempt after the first
// went below min; group ps outside the gang) and the gang job "queued"
// (4 members, pending, holding a reservation on two nodes). It records
// the namespace each GET /v1/jobs asked for.
type gangFixture struct {
	*httptest.Server
	mu     sync.Mutex
	listNS []string
}

func (f *gangFixture) lastListNS() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.listNS) == 0 {
		return ""
	}
	return f.listNS[len(f.listNS)-1]
}

func startGangFixture(t *testing.T) *gangFixture {
	t.Helper()
	f := &gangFixture{}
	min := time.Now().Add(-time.Hour).UnixNano()
	task := func(cpu, mem int) []*api.Task {
		return []*api.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sleep", "args": []string{"3600"}},
			Resources: &api.Resources{CPU: cpu, MemoryMB: mem}}}
	}
	jobs := map[string]*api.Job{
		"web": {ID: "web", Name: "web", Namespace: "default", Type: api.JobTypeService, Priority: 50, Status: "running", Datacenters: []string{"dc1"},
			TaskGroups: []*api.TaskGroup{{Name: "web", Count: 1, Tasks: task(500, 256)}}},
		"train": {ID: "train", Name: "train", Namespace: "ml", Type: api.JobTypeBatch, Priority: 60, Status: "running", Queue: "team-a", Datacenters: []string{"dc1"},
			TaskGroups: []*api.TaskGroup{
				{Name: "workers", Count: 2, Tasks: task(2000, 1024), EphemeralDisk: &api.EphemeralDisk{SizeMB: 300},
					Gang: &api.Gang{Topology: &api.Topology{Level: "rack", Mode: api.TopologyPreferred}}},
				{Name: "ps", Count: 1, Tasks: task(500, 512)}}},
		"queued": {ID: "queued", Name: "queued", Namespace: "ml", Type: api.JobTypeBatch, Priority: 70, Status: "pending", Queue: "team-a", Datacenters: []string{"dc1"},
			TaskGroups: []*api.TaskGroup{{Name: "workers", Count: 4, Tasks: task(1000, 1024), Gang: &api.Gang{Min: 3}}}},
	}
	gang := func(rank int, leader string) *api.AllocGang {
		return &api.AllocGang{ID: "workers", Size: 2, Rank: rank, LeaderAddr: leader}
	}
	alloc := func(id, eval, name, node, nodeName, client, desired string, idx uint64, g *api.AllocGang) *api.AllocListStub {
		return &api.AllocListStub{ID: id, EvalID: eval, Name: name, Namespace: "ml", JobID: "train", TaskGroup: strings.Split(strings.TrimPrefix(name, "train."), "[")[0],
			NodeID: node, NodeName: nodeName, ClientStatus: client, DesiredStatus: desired, CreateIndex: idx, CreateTime: min + int64(idx)*int64(time.Minute), Gang: g}
	}
	const n1, n2, n3 = "11111111-0000-4000-8000-000000000001", "22222222-0000-4000-8000-000000000002", "33333333-0000-4000-8000-000000000003"
	first := alloc("a0000000-0000-4000-8000-000000000001", "e1", "train.workers[0]", n3, "gpu-3", api.AllocClientStatusFailed, api.AllocDesiredStatusRun, 10, gang(0, "10.0.0.7:29500"))
	second := alloc("a0000000-0000-4000-8000-000000000002", "e1", "train.workers[1]", n2, "gpu-2", api.AllocClientStatusComplete, api.AllocDesiredStatusStop, 10, gang(1, "10.0.0.7:29500"))
	second.DesiredDescription = "gang workers below min for 30s (1 of 2 members running)"
	allocs := map[string][]*api.AllocListStub{
		"train": {first, second,
			alloc("b0000000-0000-4000-8000-000000000001", "e2", "train.workers[0]", n1, "gpu-1", api.AllocClientStatusRunning, api.AllocDesiredStatusRun, 20, gang(0, "10.0.0.5:29500")),
			alloc("b0000000-0000-4000-8000-000000000002", "e2", "train.workers[1]", n2, "gpu-2", api.AllocClientStatusRunning, api.AllocDesiredStatusRun, 20, gang(1, "10.0.0.5:29500")),
			alloc("c0000000-0000-4000-8000-000000000001", "e0", "train.ps[0]", n1, "gpu-1", api.AllocClientStatusRunning, api.AllocDesiredStatusRun, 5, nil)},
	}
	evals := map[string][]*api.Evaluation{
		"queued": {{ID: "e9000000-0000-4000-8000-000000000009", Namespace: "ml", JobID: "queued", Status: api.EvalStatusBlocked, CreateIndex: 30,
			Reservation: &api.Reservation{Namespace: "ml", JobID: "queued", Priority: 70, Groups: []string{"workers"}, CreateTime: min,
				Nodes: []*api.ReservedNode{{NodeID: n1, Members: 2}, {NodeID: n2, Members: 2}}}}},
	}
	nodes := map[string]*api.Node{
		n1: {ID: n1, Name: "gpu-1", Meta: map[string]string{"topology.rack": "r1"}},
		n2: {ID: n2, Name: "gpu-2", Meta: map[string]string{"topology.rack": "r2"}},
		n3: {ID: n3, Name: "gpu-3", Meta: map[string]string{"topology.rack": "r1"}},
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
	notFound := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":"not_found","message":"not found"}}`))
	}
	mux.HandleFunc("GET /v1/namespaces", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, []*api.Namespace{{Name: "default"}, {Name: "ml"}})
	})
	mux.HandleFunc("GET /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		ns := r.URL.Query().Get("namespace")
		if r.URL.Query().Get("index") == "" {
			f.mu.Lock()
			f.listNS = append(f.listNS, ns)
			f.mu.Unlock()
		}
		var out []*api.JobListStub
		for _, id := range []string{"queued", "train", "web"} {
			if j := jobs[id]; ns == "*" || ns == j.Namespace || ns == "" && j.Namespace == "default" {
				out = append(out, j.Stub(&api.JobSummary{JobID: id, Namespace: j.Namespace}))
			}
		}
		answer(w, r, out)
	})
	job := func(r *http.Request) *api.Job {
		j := jobs[r.PathValue("id")]
		ns := r.URL.Query().Get("namespace")
		if ns == "" {
			ns = "default"
		}
		if j == nil || j.Namespace != ns {
			return nil
		}
		return j
	}
	mux.HandleFunc("GET /v1/job/{id}", func(w http.ResponseWriter, r *http.Request) {
		if j := job(r); j != nil {
			answer(w, r, j)
			return
		}
		notFound(w)
	})
	mux.HandleFunc("GET /v1/job/{id}/allocations", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, append([]*api.AllocListStub{}, allocs[r.PathValue("id")]...))
	})
	mux.HandleFunc("GET /v1/job/{id}/evaluations", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, append([]*api.Evaluation{}, evals[r.PathValue("id")]...))
	})
	mux.HandleFunc("GET /v1/job/{id}/versions", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, map[string]any{"Versions": []*api.Job{job(r)}})
	})
	mux.HandleFunc("GET /v1/job/{id}/summary", func(w http.ResponseWriter, r *http.Request) {
		s := map[string]api.TaskGroupSummary{}
		if r.PathValue("id") == "train" {
			s["workers"] = api.TaskGroupSummary{Running: 2, Failed: 1, Complete: 1}
			s["ps"] = api.TaskGroupSummary{Running: 1}
		}
		answer(w, r, &api.JobSummary{JobID: r.PathValue("id"), Summary: s})
	})
	mux.HandleFunc("GET /v1/node/{id}", func(w http.ResponseWriter, r *http.Request) {
		if n := nodes[r.PathValue("id")]; n != nil {
			answer(w, r, n)
			return
		}
		notFound(w)
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

// TestUIGangsGroupsNamespaces drives, against fixed API answers, the
// namespace switcher (lists GET /v1/namespaces, sends ?namespace= with
// the jobs list, keeps it in the URL and the top bar's links across a
// reload), the jobs list's Queue column, the job page's Gangs section
// (size and min, members by rank with node, rack and state, the leader
// address, the earlier attempt and why it ended, a pending gang's
// reservation) and the task-group page (count, resources, summary, the
// group's allocations only).
func TestUIGangsGroupsNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	f := startGangFixture(t)
	ctx, problems := browser(t)
	shot := newShots(t, ctx)
	const long = 30 * time.Second

	// All namespaces by default, with each job's queue.
	do(t, ctx, "open jobs", chromedp.Navigate(f.URL+"/ui/jobs"))
	until(t, ctx, "three jobs", `document.querySelectorAll('#jobs-table tr[data-job-id]').length === 3`, long)
	if ns := f.lastListNS(); ns != "*" {
		t.Fatalf("jobs list asked namespace=%q, want * (all) by default", ns)
	}
	until(t, ctx, "queue column", textHas(`#jobs-table tr[data-job-id="train"] .job-queue`, "team-a")+" && "+
		textHas(`#jobs-table tr[data-job-id="web"] .job-queue`, "default"), long)

	// The switcher lists the namespaces; choosing ml filters the list.
	until(t, ctx, "namespaces listed", `[...document.querySelectorAll('#ns-switch option')].map((o) => o.value).join(',') === ',default,ml'`, long)
	do(t, ctx, "choose ml", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('#ns-switch'); s.value = 'ml'; s.dispatchEvent(new Event('change')); })()`))
	until(t, ctx, "only ml's jobs", `location.search === '?namespace=ml' && document.querySelectorAll('#jobs-table tr[data-job-id]').length === 2 && !document.querySelector('#jobs-table tr[data-job-id="web"]')`, long)
	if ns := f.lastListNS(); ns != "ml" {
		t.Fatalf("jobs list asked namespace=%q after choosing ml", ns)
	}
	until(t, ctx, "top bar links keep the namespace", `document.querySelector('#nav a[data-nav="deployments"]').getAttribute('href') === '/ui/deployments?namespace=ml' &&
		document.querySelector('#nav a[data-nav="topology"]').getAttribute('href') === '/ui/topology'`, long)
	do(t, ctx, "reload", chromedp.Reload())
	until(t, ctx, "still ml after a reload", `document.querySelector('#ns-switch').value === 'ml' && document.querySelectorAll('#jobs-table tr[data-job-id]').length === 2`, long)
	shot.take("jobs-namespace")

	// The running gang: its second attempt, by rank, with racks.
	click(t, ctx, "open train", `#jobs-table tr[data-job-id="train"] a.job-link`)
	const g = `#gangs section[data-gang="workers"]`
	until(t, ctx, "gang running", `document.querySelector('`+g+`')?.dataset.state === 'running'`, long)
	until(t, ctx, "gang size and min", textHas(g+" .gang-size", "2 placed of 2, min 2"), long)
	until(t, ctx, "leader address", textHas(g+" .gang-leader", "10.0.0.5:29500"), long)
	until(t, ctx, "members by rank with node, rack and state", `(() => {
		const rows = [...document.querySelectorAll('#gang-workers-members tbody tr')];
		const cells = rows.map((r) => [...r.querySelectorAll('td')].map((c) => c.textContent));
		return rows.length === 2 && rows[0].dataset.rank === '0' && rows[1].dataset.rank === '1' &&
		  cells[0][3] === 'gpu-1' && cells[0][4] === 'r1' && cells[0][5] === 'running' &&
		  cells[1][3] === 'gpu-2' && cells[1][4] === 'r2' && cells[1][5] === 'running'; })()`, long)
	until(t, ctx, "the earlier attempt", `document.querySelectorAll('#gang-workers-attempts tbody tr').length === 1 && `+
		textHas("#gang-workers-attempts", "1 failed, 1 complete")+" && "+textHas("#gang-workers-attempts", "below min for 30s"), long)
	until(t, ctx, "topology", textHas(g, "rack (preferred)"), long)
	shot.take("job-gang")

	// The task-group page: only the group's allocations.
	click(t, ctx, "open the workers group", `a.group-link[data-group="workers"]`)
	until(t, ctx, "group page", `location.pathname === '/ui/jobs/train/groups/workers' && location.search === '?namespace=ml'`, long)
	until(t, ctx, "count and resources", textHas("#group-count", "2")+" && "+textHas("#group-resources", "2.0 GHz · 1.0 GiB · 300 MiB disk")+" && "+
		textHas("#group-total", "4.0 GHz · 2.0 GiB"), long)
	until(t, ctx, "summary", textHas("#group-summary", "2 running")+" && "+textHas("#group-summary", "1 failed"), long)
	until(t, ctx, "the group's allocations only", `document.querySelectorAll('#group-allocs tr[data-alloc-id]').length === 4 && !document.querySelector('#group-allocs tr[data-group="ps"]')`, long)
	until(t, ctx, "the group's gang", `!!document.querySelector('#gangs section[data-gang="workers"]')`, long)
	shot.take("group")

	// A pending gang shows the reservation it holds.
	do(t, ctx, "open queued", chromedp.Navigate(f.URL+"/ui/jobs/queued?namespace=ml"))
	until(t, ctx, "gang pending", `document.querySelector('#gangs section[data-gang="workers"]')?.dataset.state === 'pending'`, long)
	until(t, ctx, "size of a pending gang", textHas(`#gangs section[data-gang="workers"] .gang-size`, "4, min 3"), long)
	until(t, ctx, "reservation", textHas(".gang-reservation", "2 nodes held for workers (priority 70)")+" && "+
		`document.querySelectorAll('.gang-reservation a[href^="/ui/nodes/"]').length === 2`, long)
	shot.take("job-gang-pending")
	for _, p := range problems() {
		t.Errorf("browser: %s", p)
	}
}

// TestUIGangLive runs a 2-member gang (raw_exec) on a dev agent in rack
// r7 and checks what the job and group pages show from the real API: both
// members by rank on the node, its rack, running, one leader address for
// both (the allocation list carries each member's place in its gang).
func TestUIGangLive(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	chromium(t)
	httpPort := testproc.FreePort(t)
	agent := &devAgent{
		Process: testproc.StartProcess(t, "agent", "-dev", "-http-port", strconv.Itoa(httpPort),
			"-raft-port", strconv.Itoa(testproc.FreePort(t)), "-gossip-port", strconv.Itoa(testproc.FreePort(t)),
			"-node", "ui-gang-node", "-topology", "rack=r7"),
		base: fmt.Sprintf("http://127.0.0.1:%d", httpPort),
	}
	agent.waitReady(t)
	job := &api.Job{ID: "pair", Type: api.JobTypeBatch, Datacenters: []string{"*"},
		TaskGroups: []*api.TaskGroup{{Name: "workers", Count: 2, Gang: &api.Gang{},
			Tasks: []*api.Task{{Name: "w", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sleep", "args": []string{"3600"}},
				Resources: &api.Resources{CPU: 100, MemoryMB: 64}}}}}}
	if err := agent.send("PUT", "/v1/jobs", api.JobRegisterRequest{Job: job}, nil, nil); err != nil {
		t.Fatalf("register pair: %v", err)
	}
	var allocs []*api.AllocListStub
	agent.WaitFor(t, "both members running", 60*time.Second, func() bool {
		if agent.getJSON("/v1/job/pair/allocations", &allocs) != nil || len(allocs) != 2 {
			return false
		}
		for _, a := range allocs {
			if a.ClientStatus != api.AllocClientStatusRunning || a.Gang == nil {
				return false
			}
		}
		return true
	})
	leader := allocs[0].Gang.LeaderAddr
	if leader == "" || allocs[1].Gang.LeaderAddr != leader {
		t.Fatalf("members' leader addresses %q and %q, want one, set", leader, allocs[1].Gang.LeaderAddr)
	}
	ctx, problems := browser(t)
	const long = 30 * time.Second

	do(t, ctx, "open pair", chromedp.Navigate(agent.base+"/ui/jobs/pair"))
	until(t, ctx, "gang running", `document.querySelector('#gangs section[data-gang="workers"]')?.dataset.state === 'running'`, long)
	until(t, ctx, "size and leader", textHas(`#gangs .gang-size`, "2 placed of 2, min 2")+" && "+textHas(`#gangs .gang-leader`, leader), long)
	until(t, ctx, "both ranks on the node in rack r7", `(() => {
		const rows = [...document.querySelectorAll('#gang-workers-members tbody tr')];
		return rows.map((r) => r.dataset.rank).join(',') === '0,1' &&
		  rows.every((r) => r.querySelector('td.rack').textContent === 'r7' && r.textContent.includes('ui-gang-node') && r.dataset.status === 'running'); })()`, long)
	click(t, ctx, "open the group", `a.group-link[data-group="workers"]`)
	until(t, ctx, "group page with its gang and allocations", `document.querySelectorAll('#group-allocs tr[data-alloc-id]').length === 2 && !!document.querySelector('#gangs section[data-gang="workers"]')`, long)
	for _, p := range problems() {
		t.Errorf("browser: %s", p)
	}
}
