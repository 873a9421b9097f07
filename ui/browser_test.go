package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// chromium finds the browser; under CI=true a missing one is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (apt-get install chromium; make deps does it)")
	}
	t.Skip("chromium is not installed; skipping the browser tests")
	return ""
}

// devAgent is a `drover agent -dev` process on private ports.
type devAgent struct {
	*testproc.Process
	base string
}

func startDevAgent(t *testing.T) *devAgent {
	t.Helper()
	httpPort := testproc.FreePort(t)
	a := &devAgent{
		Process: testproc.StartProcess(t, "agent", "-dev", "-http-port", strconv.Itoa(httpPort),
			"-raft-port", strconv.Itoa(testproc.FreePort(t)), "-gossip-port", strconv.Itoa(testproc.FreePort(t)),
			"-node", "ui-test-node"),
		base: fmt.Sprintf("http://127.0.0.1:%d", httpPort),
	}
	a.waitReady(t)
	return a
}

// waitReady polls until the agent's node registered and is ready.
func (a *devAgent) waitReady(t *testing.T) {
	t.Helper()
	a.WaitFor(t, "dev agent's node ready", 60*time.Second, func() bool {
		var nodes []*api.NodeListStub
		return a.getJSON("/v1/nodes", &nodes) == nil && len(nodes) > 0 && nodes[0].Status == api.NodeStatusReady
	})
}

func (a *devAgent) getJSON(p string, v any) error {
	resp, err := http.Get(a.base + p)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", p, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// browser starts headless Chromium with a fresh profile and the flags this
// machine's closed network needs; it fails the test on any uncaught
// JavaScript exception or console.error from the UI.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	exe := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 8*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg = d.Exception.Description
			}
			mu.Lock()
			problems = append(problems, fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber, msg))
			mu.Unlock()
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range e.Args {
					if a.Description != "" {
						parts = append(parts, a.Description)
					} else {
						parts = append(parts, string(a.Value))
					}
				}
				mu.Lock()
				problems = append(problems, "console.error: "+strings.Join(parts, " "))
				mu.Unlock()
			}
		}
	}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// shots saves PNG screenshots to $DROVER_UI_SCREENSHOTS or a temp dir.
type shots struct {
	t   *testing.T
	ctx context.Context
	dir string
}

func newShots(t *testing.T, ctx context.Context) *shots {
	dir := os.Getenv("DROVER_UI_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &shots{t: t, ctx: ctx, dir: dir}
}

func (s *shots) take(name string) {
	s.t.Helper()
	buf, err := chromedp.Run(s.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		s.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(s.dir, name+".png")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		s.t.Fatal(err)
	}
	s.t.Logf("screenshot %s", p)
}

// do runs browser steps, failing the test with what step failed.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main')?.innerText ?? ''`))
		t.Fatalf("%s: %v\nat %s, page text:\n%s", what, err, loc, body)
	}
}

// until polls a JavaScript predicate in the page with a deadline.
func until(t *testing.T, ctx context.Context, what, predicate string, timeout time.Duration) {
	t.Helper()
	do(t, ctx, what, chromedp.Action[chromedp.Void](func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](predicate, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout))(ctx, tg)
		return chromedp.Void{}, err
	}))
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// click clicks an element from the page's own JavaScript once it exists:
// pages re-render live, and a click dispatched at coordinates could land
// on a replaced node.
func click(t *testing.T, ctx context.Context, what, sel string) {
	t.Helper()
	until(t, ctx, what+" (waiting for "+sel+")", fmt.Sprintf(`!!document.querySelector(%s)`, jsString(sel)), 90*time.Second)
	do(t, ctx, what, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%s).click()`, jsString(sel))))
}

// textHas is a predicate: the element's text contains want.
func textHas(sel, want string) string {
	return fmt.Sprintf(`(document.querySelector(%s)?.textContent ?? '').includes(%s)`, jsString(sel), jsString(want))
}

// TestUIBrowser drives the UI in headless Chromium against a real dev agent:
// run examples/hello-exec.hcl through the Run page, watch the job and its
// allocation turn running without a reload, read the live log, visit every
// page (saving screenshots), stop the job, and see the connection indicator
// react to the agent going away and coming back.
func TestUIBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	if os.Geteuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the exec driver needs root")
	}
	hcl, err := os.ReadFile("../examples/hello-exec.hcl")
	if err != nil {
		t.Fatal(err)
	}
	agent := startDevAgent(t)
	var nodes []*api.NodeListStub
	if err := agent.getJSON("/v1/nodes", &nodes); err != nil || len(nodes) != 1 {
		t.Fatalf("nodes: %v, %v; want the dev agent's one", nodes, err)
	}
	localID := nodes[0].ID
	gpuID := gpuNode(t, agent)
	gpuJobs(t, agent)
	ctx, problems := browser(t)
	shot := newShots(t, ctx)
	const long = 90 * time.Second

	// / redirects to /ui/, which shows the jobs page.
	do(t, ctx, "open /", chromedp.Navigate(agent.base+"/"), chromedp.WaitVisible(chromedp.ID("jobs-table")))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || loc != agent.base+"/ui/jobs" {
		t.Fatalf("location after opening / = %q (%v), want %s/ui/jobs", loc, err, agent.base)
	}
	until(t, ctx, "connection indicator live", textHas("#conn", "live"), long)
	// A marker that a reload would erase.
	do(t, ctx, "set marker", chromedp.Evaluate[chromedp.Void](`window.__droverNoReload = true`))

	// Run page: bad input is shown in place and the text is kept.
	do(t, ctx, "open run page", chromedp.Click(chromedp.CSS(`#nav a[data-nav="run"]`)), chromedp.WaitVisible(chromedp.ID("run-hcl")))
	do(t, ctx, "type a broken job", chromedp.SetValue(chromedp.ID("run-hcl"), `job "broken" { group "g" { task "t" { driver = } } }`),
		chromedp.Click(chromedp.ID("run-plan")))
	until(t, ctx, "parse error shown", `!!document.querySelector('#run-result .error')`, long)
	if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.ID("run-hcl"))); !strings.Contains(v, `job "broken"`) {
		t.Fatalf("the job text was lost after a parse error: %q", v)
	}

	// Plan, then run, hello-exec.hcl.
	do(t, ctx, "paste hello-exec.hcl", chromedp.SetValue(chromedp.ID("run-hcl"), string(hcl)), chromedp.Click(chromedp.ID("run-plan")))
	until(t, ctx, "plan shown", `!!document.querySelector('#plan-updates') && !document.querySelector('#run-submit').disabled`, long)
	until(t, ctx, "plan places one alloc", textHas("#plan-updates", "hello"), long)
	until(t, ctx, "plan diff names the job", textHas("#plan-diff", `Job: "hello"`), long)
	shot.take("run")
	do(t, ctx, "run the job", chromedp.Click(chromedp.ID("run-submit")))
	until(t, ctx, "job page after run", `location.pathname === '/ui/jobs/hello'`, long)

	// The jobs list shows it running, without a reload.
	do(t, ctx, "open jobs page", chromedp.Click(chromedp.CSS(`#nav a[data-nav="jobs"]`)))
	until(t, ctx, "hello running in the jobs list", `!!document.querySelector('#jobs-table tr[data-job-id="hello"][data-status="running"]')`, long)
	until(t, ctx, "hello has a running alloc count", textHas(`#jobs-table tr[data-job-id="hello"]`, "1 running"), long)
	shot.take("jobs")

	// Job detail: the allocation turns running live.
	click(t, ctx, "open job", `#jobs-table tr[data-job-id="hello"] a.job-link`)
	until(t, ctx, "alloc running on the job page", `!!document.querySelector('#allocs-table tr[data-status="running"]')`, long)
	until(t, ctx, "versions listed", `!!document.querySelector('#versions-table')`, long)
	until(t, ctx, "evaluations listed", textHas("#evals-table", "job-register"), long)
	shot.take("job")

	// Allocation: the live log tail shows the task's output.
	click(t, ctx, "open allocation", `#allocs-table tr[data-status="running"] a.alloc-link`)
	until(t, ctx, "log line", textHas("#log", "hello from drover"), long)
	until(t, ctx, "task event timeline", textHas("#alloc-tasks", "Started"), long)
	until(t, ctx, "resource usage", `!!document.querySelector('#alloc-stats .bar.mem')`, long)
	until(t, ctx, "file browser lists the alloc dir", `!!document.querySelector('#files-table a.dir')`, long)
	shot.take("allocation")
	// Follow off pauses the tail; the file browser reads the same log file.
	do(t, ctx, "follow off", chromedp.Click(chromedp.ID("log-follow")))
	until(t, ctx, "tail paused", textHas("#log-state", "paused"), long)
	clickText := func(what, sel, text string) {
		t.Helper()
		do(t, ctx, what, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`[...document.querySelectorAll(%s)].find((a) => a.textContent === %s).click()`, jsString(sel), jsString(text))))
	}
	clickText("open alloc/", "#files-table a.dir", "alloc/")
	until(t, ctx, "alloc/ listed", `[...document.querySelectorAll('#files-table a.dir')].some((a) => a.textContent === 'logs/')`, long)
	clickText("open logs/", "#files-table a.dir", "logs/")
	until(t, ctx, "logs/ listed", `[...document.querySelectorAll('#files-table a.file')].some((a) => a.textContent === 'hello.stdout.0')`, long)
	clickText("open hello.stdout.0", "#files-table a.file", "hello.stdout.0")
	until(t, ctx, "file content", textHas("#file-content", "hello from drover"), long)

	// Nodes: the node with its allocated-resource bars.
	do(t, ctx, "open nodes", chromedp.Click(chromedp.CSS(`#nav a[data-nav="nodes"]`)))
	until(t, ctx, "node listed with allocated cpu and memory",
		fmt.Sprintf(`[...document.querySelectorAll('#nodes-table tr[data-node-id="%s"] .bar')].filter((b) => parseFloat(b.dataset.pct) > 0).length >= 2`, localID), long)
	until(t, ctx, "GPU node shows 6 of 8 GPUs allocated", textHas(fmt.Sprintf(`#nodes-table tr[data-node-id="%s"] .bar.gpu`, gpuID), "6 / 8"), long)
	shot.take("nodes")
	click(t, ctx, "open GPU node", fmt.Sprintf(`#nodes-table tr[data-node-id="%s"] a.node-link`, gpuID))
	until(t, ctx, "GPU link matrix", textHas("#gpu-matrix", "NV4")+" && "+textHas("#gpu-matrix", "SYS"), long)
	until(t, ctx, "unhealthy GPU shown", textHas("#devices", "fallen off the bus"), long)
	shot.take("node-gpu")
	// Eligibility toggle from the UI, checked through the API.
	click(t, ctx, "mark ineligible", "#node-eligibility")
	until(t, ctx, "shown ineligible", textHas("#node-eligibility", "Mark eligible"), long)
	var gn api.Node
	if err := agent.getJSON("/v1/node/"+gpuID, &gn); err != nil || gn.SchedulingEligibility != api.NodeSchedulingIneligible {
		t.Fatalf("after Mark ineligible: eligibility %q (%v), want ineligible", gn.SchedulingEligibility, err)
	}
	click(t, ctx, "mark eligible", "#node-eligibility")
	until(t, ctx, "shown eligible", textHas("#node-eligibility", "Mark ineligible"), long)
	do(t, ctx, "back to nodes", chromedp.Click(chromedp.CSS(`#nav a[data-nav="nodes"]`)))
	click(t, ctx, "open node", fmt.Sprintf(`#nodes-table tr[data-node-id="%s"] a.node-link`, localID))
	until(t, ctx, "node drivers", textHas("#drivers-table", "exec"), long)
	until(t, ctx, "node allocations", textHas("#node", "hello"), long)
	shot.take("node")
	// The node's deep link survives a reload.
	nodeURL, _ := chromedp.Run(ctx, chromedp.Location())
	do(t, ctx, "reload node page", chromedp.Reload())
	until(t, ctx, "node page after reload", textHas("#drivers-table", "exec"), long)
	do(t, ctx, "set marker again", chromedp.Evaluate[chromedp.Void](`window.__droverNoReload = true`))
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != nodeURL {
		t.Fatalf("after reload at %q, want %q", loc, nodeURL)
	}

	do(t, ctx, "open topology", chromedp.Click(chromedp.CSS(`#nav a[data-nav="topology"]`)))
	until(t, ctx, "node box filled", `[...document.querySelectorAll('#topology .nodebox .strip')].some((b) => parseFloat(b.dataset.pct) > 0)`, long)
	until(t, ctx, "cluster totals", textHas("#cluster-totals", "2 / 2"), long)
	until(t, ctx, "6 GPUs filled", `document.querySelectorAll('#topology .gpus i.used').length === 6`, long)
	shot.take("topology")

	do(t, ctx, "open servers", chromedp.Click(chromedp.CSS(`#nav a[data-nav="servers"]`)))
	until(t, ctx, "leader shown", `!!document.querySelector('#leader')`, long)
	until(t, ctx, "member is the leader", textHas("#members-table", "leader"), long)
	shot.take("servers")

	do(t, ctx, "open evaluations", chromedp.Click(chromedp.CSS(`#nav a[data-nav="evaluations"]`)))
	until(t, ctx, "evaluation listed", `!!document.querySelector('#evals-table tr[data-eval-id]')`, long)
	until(t, ctx, "blocked evaluation listed", `!!document.querySelector('#evals-table tr[data-status="blocked"]')`, long)
	shot.take("evaluations")

	// Why pending: the job that cannot be placed shows the scheduler's reasons.
	click(t, ctx, "open too-big job", `#evals-table tr[data-status="blocked"] a`)
	until(t, ctx, "placement failures shown", textHas("#placement-failures", `group "huge"`), long)
	until(t, ctx, "structured why-pending reason", textHas(`#placement-failures li[data-kind="devices"]`, "needs 16 nvidia/gpu on one node"), long)
	shot.take("job-failures")

	// Errors from the API are shown in place.
	do(t, ctx, "open a missing job", chromedp.Navigate(agent.base+"/ui/jobs/no-such-job"))
	until(t, ctx, "not-found error shown", textHas(".error", "not found"), long)
	do(t, ctx, "set marker after navigation", chromedp.Evaluate[chromedp.Void](`window.__droverNoReload = true`))

	// Stop the job from the UI (two-step confirm).
	do(t, ctx, "back to the jobs", chromedp.Click(chromedp.CSS(`#nav a[data-nav="jobs"]`)))
	click(t, ctx, "back to the job", `#jobs-table tr[data-job-id="hello"] a.job-link`)
	click(t, ctx, "stop", "#job-stop")
	until(t, ctx, "stop armed", textHas("#job-stop", "Confirm"), long)
	click(t, ctx, "confirm stop", "#job-stop")
	until(t, ctx, "job shown stopped", `!!document.querySelector('#job-stopped') && !!document.querySelector('#job-start')`, long)
	var job api.Job
	if err := agent.getJSON("/v1/job/hello", &job); err != nil || !job.Stop {
		t.Fatalf("after Stop in the UI: job %+v (%v), want Stop=true", job, err)
	}
	until(t, ctx, "alloc stops", `!document.querySelector('#allocs-table tr[data-status="running"]')`, long)
	// Start it again, then re-evaluate it.
	click(t, ctx, "start", "#job-start")
	until(t, ctx, "running again", `!!document.querySelector('#allocs-table tr[data-status="running"]') && !!document.querySelector('#job-stop')`, long)
	click(t, ctx, "re-evaluate", "#job-eval")
	until(t, ctx, "re-evaluation created", textHas("#job-action-result", "evaluation"), long)
	var started api.Job // fresh: Stop=false is omitted from the JSON
	if err := agent.getJSON("/v1/job/hello", &started); err != nil || started.Stop || started.ID != "hello" {
		t.Fatalf("after Start in the UI: job %q Stop=%v (%v), want hello with Stop=false", started.ID, started.Stop, err)
	}

	// Phone width: the jobs page still renders its table.
	do(t, ctx, "phone viewport", chromedp.EmulateViewport(390, 844), chromedp.Click(chromedp.CSS(`#nav a[data-nav="jobs"]`)),
		chromedp.WaitVisible(chromedp.ID("jobs-table")))
	shot.take("jobs-phone")
	do(t, ctx, "desktop viewport", chromedp.EmulateViewport(1280, 900))

	// The indicator: lost when the agent goes away, back when it returns.
	if err := agent.Stop(t, 30*time.Second); err != nil {
		t.Fatalf("agent exited with %v after SIGTERM, want 0", err)
	}
	until(t, ctx, "connection lost shown", `document.querySelector('#conn').classList.contains('lost') && !document.querySelector('#banner').hidden`, long)
	shot.take("disconnected")
	agent.Restart(t)
	agent.waitReady(t)
	until(t, ctx, "connection recovered shown", `document.querySelector('#conn').classList.contains('ok')`, long)

	// No reload happened since the marker was set, and no script failed.
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__droverNoReload === true`)); err != nil || !ok {
		t.Fatalf("the page reloaded (marker gone: %v, %v); pages must update live", ok, err)
	}
	for _, p := range problems() {
		t.Errorf("browser: %s", p)
	}
}
