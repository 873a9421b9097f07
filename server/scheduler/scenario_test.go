package scheduler

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestScenarios runs the scripted scenarios in testdata/*.txt and compares
// the printed plans with testdata/*.golden (go test -update rewrites them).
//
// Commands, one per line (# starts a comment):
//
//	node NAME dc=dc1 cpu=4000 mem=8192 [gpus=dgx] [class=C] [pool=P] [status=down] [attr.K=V] [meta.K=V] [ports=22,80] [driver=exec]
//	job                      followed by the job as JSON (ends when the JSON is complete)
//	schedule JOB [trigger=T] [limit=N] [followup] [preempt=service|batch|none]   run the scheduler, print the result, apply the plan
//	alloc NAME|* status=failed|complete|running|lost [healthy|unhealthy]   change client-owned fields
//	nodeset NAME [status=S] [eligibility=E] [drain=true]
//	migrate NAME             mark every live alloc on node NAME for migration
//	time +DURATION           advance the clock
//	stopjob JOB              mark the job stopped (a new version)
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			got := runScenario(t, f)
			golden := strings.TrimSuffix(f, ".txt") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (run with -update to create): %v", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s: output differs from golden (-want +got):\n%s", name, diff)
			}
		})
	}
}

type scenario struct {
	t     *testing.T
	st    *memState
	now   time.Time
	evals int
	out   strings.Builder
	names map[string]string // node ID -> name

	lastFollowUp string
}

func runScenario(t *testing.T, path string) string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := &scenario{t: t, st: newMemState(), now: testNow, names: map[string]string{}}
	lines := bufio.NewScanner(f)
	lineNo := 0
	for lines.Scan() {
		lineNo++
		line := strings.TrimSpace(lines.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		sc.out.WriteString("> " + line + "\n")
		switch fields[0] {
		case "node":
			sc.node(fields[1], kv(fields[2:]))
		case "job":
			var buf strings.Builder
			for lines.Scan() {
				lineNo++
				buf.WriteString(lines.Text() + "\n")
				if json.Valid([]byte(buf.String())) {
					break
				}
			}
			var job api.Job
			if err := json.Unmarshal([]byte(buf.String()), &job); err != nil {
				t.Fatalf("%s:%d: job: %v", path, lineNo, err)
			}
			if job.Priority == 0 {
				job.Priority = 50
			}
			sc.st.upsertJob(&job)
		case "schedule":
			sc.schedule(fields[1], kv(fields[2:]))
		case "alloc":
			sc.alloc(fields[1], kv(fields[2:]))
		case "nodeset":
			sc.nodeSet(fields[1], kv(fields[2:]))
		case "migrate":
			yes := true
			for _, a := range sc.st.byNode["node-"+fields[1]] {
				if !a.TerminalStatus() {
					c := a.Copy()
					c.DesiredTransition.Migrate = &yes
					sc.st.upsertAlloc(c)
				}
			}
		case "time":
			d, err := time.ParseDuration(strings.TrimPrefix(fields[1], "+"))
			if err != nil {
				t.Fatalf("%s:%d: %v", path, lineNo, err)
			}
			sc.now = sc.now.Add(d)
		case "stopjob":
			j := *sc.st.jobs["default/"+fields[1]]
			j.Stop = true
			sc.st.upsertJob(&j)
		default:
			t.Fatalf("%s:%d: unknown command %q", path, lineNo, fields[0])
		}
	}
	return sc.out.String()
}

func kv(fields []string) map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

func (sc *scenario) node(name string, o map[string]string) {
	cpu, _ := strconv.ParseInt(o["cpu"], 10, 64)
	mem, _ := strconv.ParseInt(o["mem"], 10, 64)
	if cpu == 0 {
		cpu = 4000
	}
	if mem == 0 {
		mem = 8192
	}
	dc := o["dc"]
	if dc == "" {
		dc = "dc1"
	}
	n := testNode(name, dc, cpu, mem)
	n.NodeClass = o["class"]
	if p := o["pool"]; p != "" {
		n.NodePool = p
	}
	if s := o["status"]; s != "" {
		n.Status = s
	}
	if p := o["ports"]; p != "" {
		n.ReservedResources = &api.NodeReservedResources{ReservedHostPorts: p}
	}
	if o["gpus"] == "dgx" { // 8 GPUs, 1,3,5,7 NVLink-connected (dgxLike)
		n.NodeResources.Devices = dgxLike(name).NodeResources.Devices
	}
	if d := o["driver"]; d != "" {
		n.Drivers = map[string]*api.DriverInfo{d: {Detected: true, Healthy: true}}
	}
	for k, v := range o {
		if a, ok := strings.CutPrefix(k, "attr."); ok {
			n.Attributes[a] = v
		}
		if m, ok := strings.CutPrefix(k, "meta."); ok {
			n.Meta[m] = v
		}
	}
	sc.names[n.ID] = name
	sc.st.addNode(n)
}

func (sc *scenario) nodeSet(name string, o map[string]string) {
	for i, n := range sc.st.nodes {
		if n.Name != name {
			continue
		}
		c := n.Copy()
		if s := o["status"]; s != "" {
			c.Status = s
		}
		if e := o["eligibility"]; e != "" {
			c.SchedulingEligibility = e
		}
		if o["drain"] == "true" {
			c.Drain = true
		}
		sc.st.nodes[i] = c
		sc.st.index++
		return
	}
	sc.t.Fatalf("no node %q", name)
}

func (sc *scenario) alloc(name string, o map[string]string) {
	found := false
	for _, a := range sc.st.allocs {
		if (name != "*" && a.Name != name) || a.DesiredStatus != api.AllocDesiredStatusRun || a.ClientTerminalStatus() {
			continue
		}
		found = true
		c := a.Copy()
		if s := o["status"]; s != "" {
			c.ClientStatus = s
			if s == api.AllocClientStatusFailed || s == api.AllocClientStatusComplete {
				c.TaskStates = map[string]*api.TaskState{"server": {State: api.TaskStateDead, Failed: s == api.AllocClientStatusFailed, FinishedAt: sc.now}}
			}
		}
		for _, h := range []string{"healthy", "unhealthy"} {
			if _, ok := o[h]; ok {
				v := h == "healthy"
				canary := c.DeploymentStatus != nil && c.DeploymentStatus.Canary
				c.DeploymentStatus = &api.AllocDeploymentStatus{Healthy: &v, Canary: canary}
			}
		}
		c.ModifyTime = sc.now.UnixNano()
		sc.st.upsertAlloc(c)
	}
	if !found {
		sc.t.Fatalf("no live alloc %q", name)
	}
}

func (sc *scenario) schedule(job string, o map[string]string) {
	j := sc.st.jobs["default/"+job]
	sc.evals++
	ev := &api.Evaluation{ID: fmt.Sprintf("eval-%d", sc.evals), Namespace: api.DefaultNamespace, JobID: job,
		Priority: 50, Type: api.JobTypeService, TriggeredBy: api.EvalTriggerJobRegister, Status: api.EvalStatusPending}
	if j != nil {
		ev.Type = j.Type
	}
	if tr := o["trigger"]; tr != "" {
		ev.TriggeredBy = tr
	}
	if _, ok := o["followup"]; ok {
		ev.ID = sc.lastFollowUp // run the latest follow-up eval
		ev.TriggeredBy = api.EvalTriggerRetryFailedAlloc
	}
	opts := Options{Now: sc.now}
	if pr, ok := o["preempt"]; ok {
		opts.Preemption = &PreemptionConfig{ServiceSchedulerEnabled: pr == "service", BatchSchedulerEnabled: pr == "batch",
			SystemSchedulerEnabled: pr != "none", SysBatchSchedulerEnabled: pr != "none"}
	}
	if l := o["limit"]; l != "" {
		opts.SampleLimit, _ = strconv.Atoi(l)
	}
	res, err := Schedule(sc.st, ev, opts)
	if err != nil {
		sc.t.Fatalf("schedule: %v", err)
	}
	sc.print(res)
	if len(res.FollowUps) > 0 {
		sc.lastFollowUp = res.FollowUps[len(res.FollowUps)-1].ID
	}
	sc.st.apply(res.Plan)
}

func (sc *scenario) print(res *Result) {
	var lines []string
	for _, list := range res.Plan.NodeUpdate {
		for _, a := range list {
			l := fmt.Sprintf("  stop %s on %s: %s", a.Name, sc.names[a.NodeID], a.DesiredDescription)
			if a.ClientStatus == api.AllocClientStatusLost {
				l += " (lost)"
			}
			if a.NextAllocation != "" {
				l += " -> replaced"
			}
			lines = append(lines, l)
		}
	}
	for _, list := range res.Plan.NodeAllocation {
		for _, a := range list {
			if a.CreateIndex != 0 {
				what := "update in place"
				if a.FollowupEvalID != "" {
					what = "annotate follow-up"
				}
				lines = append(lines, fmt.Sprintf("  %s %s on %s", what, a.Name, sc.names[a.NodeID]))
				continue
			}
			l := fmt.Sprintf("  place %s on %s", a.Name, sc.names[a.NodeID])
			if m := a.Metrics; m != nil && len(m.ScoreMetaData) > 0 {
				for _, sm := range m.ScoreMetaData {
					if sm.NodeID == a.NodeID {
						l += fmt.Sprintf(" score=%.3f", sm.NormScore)
						for _, c := range sm.Scores { // in name order
							l += fmt.Sprintf(" %s=%.3f", c.Name, c.Value)
						}
					}
				}
			}
			if a.PreviousAllocation != "" {
				l += " (replaces " + sc.st.allocs[a.PreviousAllocation].Name + ")"
			}
			if a.RescheduleTracker != nil {
				l += fmt.Sprintf(" reschedule#%d", len(a.RescheduleTracker.Events))
			}
			if len(a.AllocatedResources.Shared.Ports) > 0 {
				for _, p := range a.AllocatedResources.Shared.Ports {
					if p.Value >= api.DefaultMinDynamicPort {
						l += fmt.Sprintf(" port %s=dynamic", p.Label)
					} else {
						l += fmt.Sprintf(" port %s=%d", p.Label, p.Value)
					}
				}
			}
			if a.DeploymentID != "" {
				l += " [deployment]"
			}
			if a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
				l += " [canary]"
			}
			lines = append(lines, l)
		}
	}
	for _, list := range res.Plan.NodePreemptions {
		for _, a := range list {
			byName := "?"
			for _, placed := range res.Plan.NodeAllocation { // a gang's members: any node
				for _, l := range placed {
					if l.ID == a.PreemptedByAllocation {
						byName = l.Name
					}
				}
			}
			lines = append(lines, fmt.Sprintf("  preempt %s on %s for %s", a.Name, sc.names[a.NodeID], byName))
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		sc.out.WriteString(l + "\n")
	}
	if d := res.Plan.Deployment; d != nil {
		sc.out.WriteString(fmt.Sprintf("  deployment version=%d status=%s", d.JobVersion, d.Status))
		for g, st := range d.TaskGroups {
			if st.DesiredCanaries > 0 {
				sc.out.WriteString(fmt.Sprintf(" %s: canaries %d/%d promoted=%v", g, len(st.PlacedCanaries), st.DesiredCanaries, st.Promoted))
			}
		}
		sc.out.WriteString("\n")
	}
	for _, u := range res.Plan.DeploymentUpdates {
		sc.out.WriteString("  deployment update: " + u.Status + "\n")
	}
	if res.Plan.AllAtOnce {
		sc.out.WriteString("  all-at-once\n")
	}
	groups := make([]string, 0, len(res.Eval.FailedTGAllocs))
	for g := range res.Eval.FailedTGAllocs {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		m := res.Eval.FailedTGAllocs[g]
		sc.out.WriteString("  failed " + ExplainFailure(g, m) + "\n")
		for _, r := range m.Reasons {
			sc.out.WriteString("    why (" + r.Kind + "): " + r.Message + "\n")
		}
		for _, c := range m.Counterfactuals {
			sc.out.WriteString("    " + c.Kind + ": " + c.Message + "\n")
		}
	}
	if res.Blocked != nil {
		sc.out.WriteString(fmt.Sprintf("  blocked eval (queued %v)\n", res.Blocked.QueuedAllocations))
	}
	for _, f := range res.FollowUps {
		sc.out.WriteString(fmt.Sprintf("  follow-up eval %s at +%s\n", f.ID[:8], f.WaitUntil.Sub(sc.now)))
	}
	if a := res.Plan.Annotations; a != nil {
		gs := make([]string, 0, len(a.DesiredTGUpdates))
		for g := range a.DesiredTGUpdates {
			gs = append(gs, g)
		}
		sort.Strings(gs)
		for _, g := range gs {
			u := a.DesiredTGUpdates[g]
			sc.out.WriteString(fmt.Sprintf("  %s: place=%d stop=%d ignore=%d migrate=%d inplace=%d destructive=%d\n",
				g, u.Place, u.Stop, u.Ignore, u.Migrate, u.InPlaceUpdate, u.DestructiveUpdate))
		}
	}
}
