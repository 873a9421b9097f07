package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	jobCmd.AddCommand(newJobRunCmd(), newJobPlanCmd(), newJobStatusCmd(), newJobStopCmd(),
		newJobInspectCmd(), newJobHistoryCmd())
}

func newJobRunCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run [flags] FILE",
		Short: "Submit a job file and monitor its evaluation",
		Long: `Submit a job file and monitor its evaluation until it completes.
Exit codes (as Nomad's): 0 all placed (or -detach/-output), 1 error,
2 usage error or allocations that could not be placed (the job is
registered and waits for capacity).`,
		Args: exactArgs(1),
	}
	vars, varFiles := addVarFlags(cmd)
	detach := cmd.Flags().Bool("detach", false, "return after submitting, without monitoring the evaluation")
	output := cmd.Flags().Bool("output", false, `print the job as {"Job":{...}} JSON instead of submitting it`)
	checkIndex := cmd.Flags().Uint64("check-index", 0, "register only if the job's modify index matches (0: the job must not exist)")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		job, err := loadJob(args[0], *vars, *varFiles, namespaceFlag(cmd), cmd.ErrOrStderr())
		if err != nil {
			return jobFileErr(err)
		}
		out := cmd.OutOrStdout()
		if *output {
			return printJSON(out, &api.JobRegisterRequest{Job: job})
		}
		req := &api.JobRegisterRequest{Job: job}
		if cmd.Flags().Changed("check-index") {
			req.EnforceIndex, req.JobModifyIndex = true, *checkIndex
		}
		c := apiClient(cmd)
		resp, err := c.RegisterJob(cmd.Context(), req, &api.WriteOptions{Namespace: job.Namespace})
		if err != nil {
			return cmdErr("register job %q: %w", job.ID, err)
		}
		if *jsonOut {
			return printJSON(out, resp)
		}
		if resp.Warnings != "" {
			fmt.Fprintf(out, "Job Warnings:\n%s\n\n", resp.Warnings)
		}
		if *detach || resp.EvalID == "" {
			fmt.Fprintln(out, "Job registration successful")
			if resp.EvalID != "" {
				fmt.Fprintf(out, "Evaluation ID: %s\n", resp.EvalID)
			}
			return nil
		}
		code, err := monitorEval(cmd.Context(), out, c, resp.EvalID)
		if err != nil {
			return cmdErr("%w", err)
		}
		if code != ExitOK {
			return failed(code)
		}
		return nil
	}
	return cmd
}

// jobFileErr keeps loadJob's usage errors (exit 2); others exit 1.
func jobFileErr(err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return cmdErr("%w", err)
}

func newJobPlanCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan [flags] FILE",
		Short: "Dry-run the scheduler for a job file: diff, placements and failures",
		Long: `Exit codes (as Nomad's): 0 no allocations would be created, destroyed or updated;
1 allocations would be created, destroyed or updated (or fail to place), or an error; 2 usage.`,
		Args: exactArgs(1),
	}
	vars, varFiles := addVarFlags(cmd)
	noDiff := cmd.Flags().Bool("no-diff", false, "do not show the job diff")
	verbose := cmd.Flags().Bool("verbose", false, "show the fields of a new job, group or task that are at their defaults too")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		job, err := loadJob(args[0], *vars, *varFiles, namespaceFlag(cmd), cmd.ErrOrStderr())
		if err != nil {
			return jobFileErr(err)
		}
		c := apiClient(cmd)
		resp, err := c.PlanJob(cmd.Context(), &api.JobPlanRequest{Job: job, Diff: !*noDiff}, &api.WriteOptions{Namespace: job.Namespace})
		if err != nil {
			return cmdErr("plan job %q: %w", job.ID, err)
		}
		out := cmd.OutOrStdout()
		if *jsonOut {
			if err := printJSON(out, resp); err != nil {
				return err
			}
		} else {
			if !*verbose {
				hideDefaults(resp.Diff)
			}
			printPlan(out, job, resp)
		}
		if len(resp.FailedTGAllocs) > 0 || planChanges(resp.Annotations) {
			return failed(ExitError)
		}
		return nil
	}
	return cmd
}

// planChanges reports whether a plan would create, destroy, update or
// move allocations (anything but ignore).
func planChanges(a *api.PlanAnnotations) bool {
	if a == nil {
		return false
	}
	for _, u := range a.DesiredTGUpdates {
		if u.Place+u.Stop+u.Migrate+u.InPlaceUpdate+u.DestructiveUpdate+u.Canary+u.Preemptions > 0 {
			return true
		}
	}
	return false
}

// hideDefaults drops the fields of added objects that the server marks
// as defaults (api.FieldDefault): a new job's plan shows what its file
// sets, not every default.
func hideDefaults(d *api.JobDiff) {
	if d == nil {
		return
	}
	keep := func(fs []*api.FieldDiff) []*api.FieldDiff {
		return slices.DeleteFunc(fs, func(f *api.FieldDiff) bool { return slices.Contains(f.Annotations, api.FieldDefault) })
	}
	d.Fields = keep(d.Fields)
	for _, tg := range d.TaskGroups {
		tg.Fields = keep(tg.Fields)
		for _, t := range tg.Tasks {
			t.Fields = keep(t.Fields)
		}
	}
}

func printPlan(w io.Writer, job *api.Job, resp *api.JobPlanResponse) {
	if d := resp.Diff; d != nil {
		fmt.Fprintln(w, strings.TrimSpace(fmt.Sprintf("%s Job: %q", diffMark(d.Type), job.ID)))
		for _, f := range d.Fields {
			printFieldDiff(w, "", f)
		}
		shown := map[string]bool{}
		for _, tg := range d.TaskGroups {
			shown[tg.Name] = true
		}
		if resp.Annotations != nil {
			// Unchanged groups have no diff but still say what happens
			// to their allocations (as Nomad: "(2 ignore)").
			for _, g := range sortedKeys(resp.Annotations.DesiredTGUpdates) {
				if !shown[g] {
					fmt.Fprintf(w, "Task Group: %q%s\n", g, groupAnnotation(resp.Annotations, g))
				}
			}
		}
		for _, tg := range d.TaskGroups {
			ann := groupAnnotation(resp.Annotations, tg.Name)
			fmt.Fprintln(w, strings.TrimSpace(fmt.Sprintf("%s Task Group: %q%s", diffMark(tg.Type), tg.Name, ann)))
			for _, f := range tg.Fields {
				printFieldDiff(w, "  ", f)
			}
			for _, t := range tg.Tasks {
				extra := ""
				if len(t.Annotations) > 0 {
					extra = " (" + strings.Join(t.Annotations, ", ") + ")"
				}
				fmt.Fprintf(w, "  %s Task: %q%s\n", diffMark(t.Type), t.Name, extra)
				for _, f := range t.Fields {
					printFieldDiff(w, "    ", f)
				}
			}
		}
		fmt.Fprintln(w)
	} else if resp.Annotations != nil {
		for _, g := range sortedKeys(resp.Annotations.DesiredTGUpdates) {
			fmt.Fprintf(w, "Task Group: %q%s\n", g, groupAnnotation(resp.Annotations, g))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Scheduler dry-run:")
	if len(resp.FailedTGAllocs) == 0 {
		fmt.Fprintln(w, "- All tasks successfully allocated.")
	} else {
		fmt.Fprintln(w, "- WARNING: Failed to place all allocations.")
		for _, l := range failureLines(resp.FailedTGAllocs, job) {
			fmt.Fprintln(w, "  "+l)
		}
	}
	if resp.Warnings != "" {
		fmt.Fprintf(w, "\nJob Warnings:\n%s\n", resp.Warnings)
	}
	fmt.Fprintf(w, "\nJob Modify Index: %d\n", resp.JobModifyIndex)
	fmt.Fprintf(w, "To submit the job with version verification run:\n\ndrover job run -check-index %d FILE\n", resp.JobModifyIndex)
}

func diffMark(t string) string {
	switch t {
	case api.DiffTypeAdded:
		return "+"
	case api.DiffTypeDeleted:
		return "-"
	case api.DiffTypeEdited:
		return "+/-"
	}
	return ""
}

func printFieldDiff(w io.Writer, indent string, f *api.FieldDiff) {
	switch f.Type {
	case api.DiffTypeAdded:
		fmt.Fprintf(w, "%s  + %s: %q\n", indent, f.Name, f.New)
	case api.DiffTypeDeleted:
		fmt.Fprintf(w, "%s  - %s: %q\n", indent, f.Name, f.Old)
	case api.DiffTypeEdited:
		fmt.Fprintf(w, "%s  +/- %s: %q => %q\n", indent, f.Name, f.Old, f.New)
	}
}

func groupAnnotation(a *api.PlanAnnotations, group string) string {
	if a == nil || a.DesiredTGUpdates[group] == nil {
		return ""
	}
	u := a.DesiredTGUpdates[group]
	var parts []string
	add := func(n uint64, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(u.Place, "create")
	add(u.DestructiveUpdate, "create/destroy update")
	add(u.InPlaceUpdate, "in-place update")
	add(u.Stop, "destroy")
	add(u.Migrate, "migrate")
	add(u.Canary, "canary")
	add(u.Preemptions, "preempt")
	add(u.Ignore, "ignore")
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func newJobStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [ID]",
		Short: "List jobs, or show one job's summary, allocations and evaluations",
		Args:  rangeArgs(0, 1),
	}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		ctx := cmd.Context()
		if len(args) == 0 {
			jobs, _, err := c.Jobs(ctx, nil)
			if err != nil {
				return answer{}, cmdErr("list jobs: %w", err)
			}
			return listAnswer(jobs, "No running jobs", "ID\tType\tPriority\tStatus\tSubmit Date", func(j *api.JobListStub) string {
				return fmt.Sprintf("%s\t%s\t%d\t%s\t%s", j.ID, j.Type, j.Priority, j.Status, fmtUnixNano(j.SubmitTime))
			}), nil
		}
		q := &api.QueryOptions{}
		job, _, err := c.Job(ctx, args[0], q)
		if err != nil {
			return answer{}, cmdErr("job %q: %w", args[0], err)
		}
		summary, _, err := c.JobSummary(ctx, job.ID, q)
		if err != nil {
			return answer{}, cmdErr("job %q summary: %w", job.ID, err)
		}
		allocs, _, err := c.JobAllocations(ctx, job.ID, q)
		if err != nil {
			return answer{}, cmdErr("job %q allocations: %w", job.ID, err)
		}
		evals, _, err := c.JobEvaluations(ctx, job.ID, q)
		if err != nil {
			return answer{}, cmdErr("job %q evaluations: %w", job.ID, err)
		}
		v := map[string]any{"Job": job, "Summary": summary, "Allocations": allocs, "Evaluations": evals}
		return answer{v, func(out io.Writer) error {
			if job.IsPeriodic() || job.IsParameterized() {
				children, _, err := c.Jobs(ctx, &api.QueryOptions{Prefix: job.ID + "/"})
				if err != nil {
					return cmdErr("children of job %q: %w", job.ID, err)
				}
				printParentJob(out, job, children, time.Now())
				return nil
			}
			printJobStatusRacks(out, job, summary, allocs, evals, gangRacks(ctx, c, allocs))
			printResourceUse(out, job, jobQueue(ctx, c, job), allocs, allocStats(ctx, c, allocs), time.Now()) // job_gpu.go
			if err := printLatestDeployment(ctx, out, c, job.ID, q); err != nil {
				return cmdErr("job %q deployment: %w", job.ID, err)
			}
			printMultiregion(ctx, out, c, job) // job_multiregion.go
			return nil
		}}, nil
	})
}

// printParentJob shows a periodic or parameterized job as Nomad does: its
// next launch (periodic) and the children it launched or was dispatched
// into, newest first.
func printParentJob(w io.Writer, job *api.Job, children []*api.JobListStub, now time.Time) {
	pairs := []string{"ID", job.ID, "Name", job.Name, "Submit Date", fmtUnixNano(job.SubmitTime), "Type", job.Type,
		"Priority", strconv.Itoa(job.Priority), "Datacenters", strings.Join(job.Datacenters, ","),
		"Namespace", job.Namespace, "Status", job.Status, "Periodic", strconv.FormatBool(job.IsPeriodic()),
		"Parameterized", strconv.FormatBool(job.IsParameterized())}
	if job.IsPeriodic() {
		next := "none"
		if job.Stop {
			next = "none (stopped)"
		} else if t, err := job.Periodic.Next(now); err != nil {
			next = "invalid spec: " + err.Error()
		} else if !t.IsZero() {
			next = fmtAgo(t.UnixNano(), now)
		}
		pairs = append(pairs, "Next Periodic Launch", next)
	}
	kv(w, pairs...)
	var kids []*api.JobListStub
	for _, c := range children {
		if c.ParentID == job.ID {
			kids = append(kids, c)
		}
	}
	title := "Previously Launched Jobs"
	if job.IsParameterized() {
		title = "Dispatched Jobs"
	}
	fmt.Fprintf(w, "\n%s\n", title)
	if len(kids) == 0 {
		fmt.Fprintln(w, "No instances found")
		return
	}
	sort.Slice(kids, func(i, j int) bool { return kids[i].SubmitTime > kids[j].SubmitTime })
	rows := make([]string, 0, len(kids))
	for _, k := range kids {
		rows = append(rows, fmt.Sprintf("%s\t%s\t%s", k.ID, k.Status, fmtUnixNano(k.SubmitTime)))
	}
	table(w, "ID\tStatus\tSubmit Date", rows)
}

func printJobStatus(w io.Writer, job *api.Job, summary *api.JobSummary, allocs []*api.AllocListStub, evals []*api.Evaluation) {
	printJobStatusRacks(w, job, summary, allocs, evals, nil)
}

// printJobStatusRacks is job status with gang members' racks by node ID.
func printJobStatusRacks(w io.Writer, job *api.Job, summary *api.JobSummary, allocs []*api.AllocListStub, evals []*api.Evaluation, racks map[string]string) {
	kv(w, "ID", job.ID, "Name", job.Name, "Submit Date", fmtUnixNano(job.SubmitTime), "Type", job.Type,
		"Priority", strconv.Itoa(job.Priority), "Datacenters", strings.Join(job.Datacenters, ","),
		"Namespace", job.Namespace, "Node Pool", job.NodePool, "Status", job.Status,
		"Version", strconv.FormatUint(job.Version, 10))
	printSpill(w, job) // job_spill.go
	if summary != nil && len(summary.Summary) > 0 {
		fmt.Fprintln(w, "\nSummary")
		var rows []string
		for _, g := range sortedKeys(summary.Summary) {
			s := summary.Summary[g]
			rows = append(rows, fmt.Sprintf("%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d", g, s.Queued, s.Starting, s.Running, s.Failed, s.Complete, s.Lost, s.Unknown))
		}
		table(w, "Task Group\tQueued\tStarting\tRunning\tFailed\tComplete\tLost\tUnknown", rows)
	}
	printDeviceAsks(w, job)
	printGangs(w, job)
	printGangMembersOfJob(w, job, allocs, evals, racks)
	var blocked *api.Evaluation
	for _, e := range evals {
		if e.Status == api.EvalStatusBlocked {
			blocked = e
		}
	}
	for _, e := range evals {
		if len(e.FailedTGAllocs) > 0 && !e.TerminalStatus() || (len(e.FailedTGAllocs) > 0 && blocked != nil && e.BlockedEval == blocked.ID) {
			fmt.Fprintln(w, "\nPlacement Failure")
			for _, l := range failureLines(e.FailedTGAllocs, job) {
				fmt.Fprintln(w, l)
			}
			break
		}
	}
	if blocked != nil {
		fmt.Fprintf(w, "\nEvaluation %q is blocked waiting for capacity\n", short(blocked.ID))
		if r := blocked.Reservation; r != nil {
			fmt.Fprintln(w, reservationLine(r))
		}
	}
	printRescheduling(w, job, allocs, evals, time.Now())
	fmt.Fprintln(w, "\nAllocations")
	if printAllocTable(w, allocs) {
		printRecentEvents(w, allocs)
	}
}

// reservationLine is the job status line of a pending gang's reservation:
// the nodes it holds back from lower-priority work.
func reservationLine(r *api.Reservation) string {
	nodes := make([]string, 0, len(r.Nodes))
	for _, n := range r.Nodes {
		nodes = append(nodes, short(n.NodeID))
	}
	return fmt.Sprintf("Reservation: %d nodes held for group %s (priority %d): %s",
		len(r.Nodes), strings.Join(r.Groups, ","), r.Priority, strings.Join(nodes, ", "))
}

// printAllocTable lists allocs, newest first; false when there are none.
func printAllocTable(w io.Writer, allocs []*api.AllocListStub) bool {
	if len(allocs) == 0 {
		fmt.Fprintln(w, "No allocations placed")
		return false
	}
	sort.Slice(allocs, func(i, j int) bool { return allocs[i].CreateIndex > allocs[j].CreateIndex })
	rows := make([]string, 0, len(allocs))
	for _, a := range allocs {
		rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s", short(a.ID), short(a.NodeID), a.TaskGroup, a.JobVersion, a.DesiredStatus, a.ClientStatus, fmtUnixNano(a.ModifyTime)))
	}
	table(w, "ID\tNode ID\tTask Group\tVersion\tDesired\tStatus\tModified", rows)
	return true
}

// printRecentEvents shows the latest event of each task of the newest
// allocations (task states come with the allocation stubs).
func printRecentEvents(w io.Writer, allocs []*api.AllocListStub) {
	var rows []string
	for i, a := range allocs {
		if i == 5 {
			break
		}
		for _, task := range sortedKeys(a.TaskStates) {
			ts := a.TaskStates[task]
			if ts == nil || len(ts.Events) == 0 {
				continue
			}
			e := ts.Events[len(ts.Events)-1]
			msg := e.DisplayMessage
			if msg == "" {
				msg = e.Message
			}
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", short(a.ID), task, ts.State, fmtUnixNano(e.Time), e.Type, msg))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nRecent Task Events")
	table(w, "Alloc ID\tTask\tState\tTime\tType\tDescription", rows)
}

func newJobStopCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stop [flags] ID",
		Short: "Stop a job (and with -purge remove it)",
		Args:  exactArgs(1),
	}
	purge := cmd.Flags().Bool("purge", false, "remove the job from the state, not only stop it")
	detach := cmd.Flags().Bool("detach", false, "return without monitoring the evaluation")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := apiClient(cmd)
		resp, err := c.DeregisterJob(cmd.Context(), args[0], *purge, nil)
		if err != nil {
			return cmdErr("stop job %q: %w", args[0], err)
		}
		out := cmd.OutOrStdout()
		if *jsonOut {
			return printJSON(out, resp)
		}
		if *detach || resp.EvalID == "" {
			fmt.Fprintf(out, "Job %q stopped\n", args[0])
			if resp.EvalID != "" {
				fmt.Fprintf(out, "Evaluation ID: %s\n", resp.EvalID)
			}
			return nil
		}
		code, err := monitorEval(cmd.Context(), out, c, resp.EvalID)
		if err != nil {
			return cmdErr("%w", err)
		}
		if code == ExitError {
			return failed(code)
		}
		return nil
	}
	return cmd
}

func newJobInspectCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inspect [flags] ID | -local FILE",
		Short: `Print a job as {"Job":{...}} JSON`,
		Args:  rangeArgs(0, 1),
	}
	local := cmd.Flags().String("local", "", "parse this job file locally instead of reading a registered job")
	vars, varFiles := addVarFlags(cmd)
	version := cmd.Flags().Int64("version", -1, "print this version of the job")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		out := cmd.OutOrStdout()
		if *local != "" {
			if len(args) != 0 {
				return usageErr("job inspect: -local takes no job ID")
			}
			job, err := loadJob(*local, *vars, *varFiles, namespaceFlag(cmd), cmd.ErrOrStderr())
			if err != nil {
				return jobFileErr(err)
			}
			return printJSON(out, &api.JobRegisterRequest{Job: job})
		}
		if len(args) != 1 {
			return usageErr("job inspect takes a job ID (or -local FILE)")
		}
		c := apiClient(cmd)
		if *version >= 0 {
			vs, _, err := c.JobVersions(cmd.Context(), args[0], false, nil)
			if err != nil {
				return cmdErr("job %q versions: %w", args[0], err)
			}
			for _, j := range vs.Versions {
				if j.Version == uint64(*version) {
					return printJSON(out, &api.JobRegisterRequest{Job: j})
				}
			}
			return cmdErr("job %q has no version %d", args[0], *version)
		}
		job, _, err := c.Job(cmd.Context(), args[0], nil)
		if err != nil {
			return cmdErr("job %q: %w", args[0], err)
		}
		return printJSON(out, &api.JobRegisterRequest{Job: job})
	}
	return cmd
}

// printVersionDiff prints what a version changed against the one before.
func printVersionDiff(w io.Writer, d *api.JobDiff) {
	if d.Type == api.DiffTypeNone || len(d.Fields) == 0 && len(d.TaskGroups) == 0 {
		fmt.Fprintln(w, "Diff: none")
		return
	}
	fmt.Fprintln(w, "Diff:")
	for _, f := range d.Fields {
		printFieldDiff(w, "", f)
	}
	for _, tg := range d.TaskGroups {
		fmt.Fprintf(w, "%s Task Group: %q\n", diffMark(tg.Type), tg.Name)
		for _, f := range tg.Fields {
			printFieldDiff(w, "  ", f)
		}
		for _, t := range tg.Tasks {
			fmt.Fprintf(w, "  %s Task: %q\n", diffMark(t.Type), t.Name)
			for _, f := range t.Fields {
				printFieldDiff(w, "    ", f)
			}
		}
	}
}

func newJobHistoryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history [flags] ID",
		Short: "List a job's versions, with diffs with -p",
		Args:  exactArgs(1),
	}
	diffs := cmd.Flags().BoolP("p", "p", false, "show the diff between each version and the one before")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := apiClient(cmd)
		resp, _, err := c.JobVersions(cmd.Context(), args[0], *diffs, nil)
		if err != nil {
			return cmdErr("job %q versions: %w", args[0], err)
		}
		out := cmd.OutOrStdout()
		if *jsonOut {
			return printJSON(out, resp)
		}
		for i, j := range resp.Versions {
			kv(out, "Version", strconv.FormatUint(j.Version, 10), "Stable", strconv.FormatBool(j.Stable),
				"Submit Date", fmtUnixNano(j.SubmitTime))
			if *diffs && i < len(resp.Diffs) && resp.Diffs[i] != nil {
				printVersionDiff(out, resp.Diffs[i])
			}
			fmt.Fprintln(out)
		}
		return nil
	}
	return cmd
}
