package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	allocCmd.AddCommand(newAllocStatusCmd(), newAllocLogsCmd(), newAllocFSCmd(), newAllocRestartCmd(),
		newAllocSignalCmd(), newAllocStopCmd())
}

func newAllocStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [flags] ID",
		Short: "Show an allocation: placement, task states and recent events",
		Args:  exactArgs(1),
	}
	verbose := cmd.Flags().Bool("verbose", false, "show full IDs and placement metrics")
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		a, err := resolveAlloc(cmd.Context(), c, args[0])
		if err != nil {
			return answer{}, cmdErr("allocation %q: %w", args[0], err)
		}
		return answer{a, func(out io.Writer) error {
			printAlloc(out, a, *verbose)
			if !a.ClientTerminalStatus() {
				// The node answers for its checks; a node that cannot be
				// reached leaves the section out rather than failing the status.
				ctx, cancel := context.WithTimeout(cmd.Context(), 3*time.Second)
				if checks, err := c.AllocChecks(ctx, a.ID, nil); err == nil {
					printAllocChecks(out, checks)
				}
				cancel()
			}
			return nil
		}}, nil
	})
}

// printAllocChecks lists the latest result of each service check.
func printAllocChecks(w io.Writer, checks map[string]*api.CheckResult) {
	if len(checks) == 0 {
		return
	}
	rows := make([]string, 0, len(checks))
	for _, id := range sortedKeys(checks) {
		c := checks[id]
		task := c.Task
		if task == "" {
			task = "(group)"
		}
		out := strings.TrimSpace(strings.SplitN(c.Output, "\n", 2)[0])
		rows = append(rows, strings.Join([]string{c.Service, c.Check, task, c.Status, c.Health, out}, "\t"))
	}
	fmt.Fprintln(w, "\nService Checks:")
	table(w, "Service\tCheck\tTask\tStatus\tHealth\tOutput", rows)
}

func printAlloc(w io.Writer, a *api.Allocation, verbose bool) {
	id, node, eval := a.ID, a.NodeID, a.EvalID
	if !verbose {
		id, node, eval = short(id), short(node), short(eval)
	}
	var ver string
	if a.Job != nil {
		ver = fmt.Sprint(a.Job.Version)
	}
	pairs := []string{"ID", id, "Eval ID", eval, "Name", a.Name, "Node ID", node, "Node Name", a.NodeName,
		"Job ID", a.JobID, "Job Version", ver}
	if a.Gang != nil {
		pairs = append(pairs, "Gang", allocGangLine(a.Gang))
	}
	kv(w, append(pairs, "Client Status", a.ClientStatus,
		"Client Description", a.ClientDescription, "Desired Status", a.DesiredStatus,
		"Desired Description", a.DesiredDescription, "Created", fmtAgo(a.CreateTime, time.Now()),
		"Modified", fmtAgo(a.ModifyTime, time.Now()))...)
	printAllocAddresses(w, a.AllocatedResources)
	for _, name := range sortedKeys(a.TaskStates) {
		ts := a.TaskStates[name]
		fmt.Fprintf(w, "\nTask %q is %q\n", name, ts.State)
		if ts.Restarts > 0 || ts.Failed {
			fmt.Fprintf(w, "Restarts %d, Failed %v\n", ts.Restarts, ts.Failed)
		}
		printTaskResources(w, a.AllocatedResources, name)
		fmt.Fprintln(w, "Recent Events:")
		evs := ts.Events
		if len(evs) > 10 && !verbose {
			evs = evs[len(evs)-10:]
		}
		rows := make([]string, 0, len(evs))
		for i := len(evs) - 1; i >= 0; i-- {
			e := evs[i]
			msg := e.DisplayMessage
			if msg == "" {
				msg = e.Message
			}
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s", fmtUnixNano(e.Time), e.Type, msg))
		}
		table(w, "Time\tType\tDescription", rows)
	}
	if verbose && a.Gang != nil {
		printGangMembers(w, a.Gang)
	}
	if verbose && a.Metrics != nil {
		fmt.Fprintln(w, "\nPlacement Metrics")
		m := a.Metrics
		fmt.Fprintf(w, "Nodes evaluated %d, filtered %d, exhausted %d\n", m.NodesEvaluated, m.NodesFiltered, m.NodesExhausted)
		rows := []string{}
		for _, s := range m.ScoreMetaData {
			var parts []string
			for _, c := range s.Scores {
				parts = append(parts, fmt.Sprintf("%s=%.3g", c.Name, c.Value))
			}
			rows = append(rows, fmt.Sprintf("%s\t%s\t%.3g", s.NodeID, strings.Join(parts, " "), s.NormScore))
		}
		if len(rows) > 0 {
			table(w, "Node\tScores\tFinal Score", rows)
		}
	}
}

// printAllocAddresses lists the alloc's ports (Nomad's "Allocation
// Addresses": label, dynamic or static, host address and mapped port).
func printAllocAddresses(w io.Writer, r *api.AllocatedResources) {
	if r == nil {
		return
	}
	var rows []string
	for _, n := range r.Shared.Networks {
		add := func(ports []api.Port, dynamic string) {
			for _, p := range ports {
				to := ""
				if p.To > 0 && p.To != p.Value {
					to = fmt.Sprintf(" -> %d", p.To)
				}
				rows = append(rows, fmt.Sprintf("%s\t%s\t%s:%d%s", p.Label, dynamic, n.IP, p.Value, to))
			}
		}
		add(n.ReservedPorts, "no")
		add(n.DynamicPorts, "yes")
	}
	if len(rows) == 0 {
		for _, p := range r.Shared.Ports {
			rows = append(rows, fmt.Sprintf("%s\t-\t%s:%d", p.Label, p.HostIP, p.Value))
		}
	}
	if len(rows) > 0 {
		fmt.Fprintln(w, "\nAllocation Addresses:")
		table(w, "Label\tDynamic\tAddress", rows)
	}
}

// printTaskResources shows what the scheduler gave a task: CPU, memory,
// reserved cores and device instances (GPUs by ID, with the share held of
// each when not whole).
func printTaskResources(w io.Writer, r *api.AllocatedResources, task string) {
	if r == nil || r.Tasks[task] == nil {
		return
	}
	t := r.Tasks[task]
	fmt.Fprintln(w, "Task Resources:")
	cores := "-"
	if len(t.Cpu.ReservedCores) > 0 {
		cores = fmt.Sprint(t.Cpu.ReservedCores)
	}
	table(w, "CPU\tMemory\tCores", []string{fmt.Sprintf("%d MHz\t%d MiB\t%s", t.Cpu.CpuShares, t.Memory.MemoryMB, cores)})
	for _, d := range t.Devices {
		fmt.Fprintf(w, "Device %s/%s/%s: %s\n", d.Vendor, d.Type, d.Name, deviceGrantString(d))
	}
}

// pickTask returns the named task or the alloc's only task.
func pickTask(a *api.Allocation, task string) (string, error) {
	if task != "" {
		return task, nil
	}
	var names []string
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			for _, t := range tg.Tasks {
				names = append(names, t.Name)
			}
		}
	}
	if len(names) == 0 {
		names = sortedKeys(a.TaskStates)
	}
	if len(names) == 1 {
		return names[0], nil
	}
	sort.Strings(names)
	return "", usageErr("allocation %s has %d tasks (%s): name one", short(a.ID), len(names), strings.Join(names, ", "))
}

func newAllocLogsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logs [flags] ALLOC [TASK]",
		Short: "Print (or follow with -f) a task's stdout or stderr",
		Args:  rangeArgs(1, 2),
	}
	follow := cmd.Flags().BoolP("f", "f", false, "follow the log")
	stderr := cmd.Flags().Bool("stderr", false, "print stderr instead of stdout")
	taskFlag := cmd.Flags().String("task", "", "task name")
	tail := cmd.Flags().Bool("tail", false, "start at the end of the log (see -n and -c)")
	lines := cmd.Flags().IntP("n", "n", 10, "with -tail, the number of lines to print")
	bytesN := cmd.Flags().Int64P("c", "c", 0, "with -tail, the number of bytes to print (instead of lines)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := apiClient(cmd)
		a, err := resolveAlloc(cmd.Context(), c, args[0])
		if err != nil {
			return cmdErr("allocation %q: %w", args[0], err)
		}
		task := *taskFlag
		if len(args) == 2 {
			task = args[1]
		}
		task, err = pickTask(a, task)
		if err != nil {
			return err
		}
		typ := "stdout"
		if *stderr {
			typ = "stderr"
		}
		if *lines < 0 || *bytesN < 0 {
			return usageErr("alloc logs: -n and -c must not be negative")
		}
		origin, offset := "", int64(0)
		if *tail {
			origin, offset = "end", *bytesN
			if offset == 0 {
				// Enough bytes for -n lines of ordinary length; trimmed below.
				offset = int64(*lines+1) * 512
			}
		}
		rc, err := c.Logs(cmd.Context(), a.ID, task, typ, *follow, origin, offset)
		if err != nil {
			return cmdErr("logs of %s/%s: %w", short(a.ID), task, err)
		}
		defer rc.Close()
		out := cmd.OutOrStdout()
		if *tail && *bytesN == 0 && !*follow {
			b, err := io.ReadAll(rc)
			if err != nil {
				return cmdErr("read logs: %w", err)
			}
			_, err = out.Write(lastLines(b, *lines))
			return err
		}
		if _, err := io.Copy(out, rc); err != nil && cmd.Context().Err() == nil {
			return cmdErr("read logs: %w", err)
		}
		return nil
	}
	return cmd
}

func newAllocFSCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fs [flags] ALLOC [PATH]",
		Short: "List a directory or print a file of an allocation's directory",
		Args:  rangeArgs(1, 2),
	}
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := apiClient(cmd)
		ctx := cmd.Context()
		a, err := resolveAlloc(ctx, c, args[0])
		if err != nil {
			return cmdErr("allocation %q: %w", args[0], err)
		}
		p := "/"
		if len(args) == 2 {
			p = args[1]
		}
		out := cmd.OutOrStdout()
		var st api.AllocFileInfo
		if _, err := c.Query(ctx, "/v1/client/fs/stat/"+a.ID, &st, &api.QueryOptions{Params: map[string]string{"path": p}}); err != nil {
			return cmdErr("stat %s in %s: %w", p, short(a.ID), err)
		}
		if !st.IsDir {
			if *jsonOut {
				return printJSON(out, &st)
			}
			rc, err := c.FSCat(ctx, a.ID, p)
			if err != nil {
				return cmdErr("read %s in %s: %w", p, short(a.ID), err)
			}
			defer rc.Close()
			_, err = io.Copy(out, rc)
			return err
		}
		list, err := c.FSList(ctx, a.ID, p)
		if err != nil {
			return cmdErr("list %s in %s: %w", p, short(a.ID), err)
		}
		if *jsonOut {
			return printJSON(out, list)
		}
		rows := make([]string, 0, len(list))
		for _, f := range list {
			name := f.Name
			if f.IsDir {
				name += "/"
			}
			rows = append(rows, fmt.Sprintf("%s\t%d\t%s\t%s", f.FileMode, f.Size, fmtTime(f.ModTime), name))
		}
		table(out, "Mode\tSize\tModified Time\tName", rows)
		return nil
	}
	return cmd
}

func newAllocRestartCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restart [flags] ALLOC [TASK]",
		Short: "Restart a task (or every task) of an allocation in place",
		Args:  rangeArgs(1, 2),
	}
	all := cmd.Flags().Bool("all-tasks", false, "restart every task, prestart ones included")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := apiClient(cmd)
		a, err := resolveAlloc(cmd.Context(), c, args[0])
		if err != nil {
			return cmdErr("allocation %q: %w", args[0], err)
		}
		req := &api.AllocRestartRequest{AllTasks: *all}
		if len(args) == 2 {
			if *all {
				return usageErr("alloc restart: -all-tasks and a task name exclude each other")
			}
			req.TaskName = args[1]
		}
		if err := c.RestartAlloc(cmd.Context(), a.ID, req); err != nil {
			return cmdErr("restart %s: %w", short(a.ID), err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Allocation %q restarted\n", short(a.ID))
		return nil
	}
	return cmd
}

func newAllocSignalCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "signal [flags] ALLOC [TASK]",
		Short: "Send a signal to a task (or every task) of an allocation",
		Args:  rangeArgs(1, 2),
	}
	sig := cmd.Flags().StringP("s", "s", "SIGKILL", "signal to send")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := apiClient(cmd)
		a, err := resolveAlloc(cmd.Context(), c, args[0])
		if err != nil {
			return cmdErr("allocation %q: %w", args[0], err)
		}
		req := &api.AllocSignalRequest{Signal: strings.ToUpper(*sig)}
		if len(args) == 2 {
			req.Task = args[1]
		}
		if err := c.SignalAlloc(cmd.Context(), a.ID, req); err != nil {
			return cmdErr("signal %s: %w", short(a.ID), err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Allocation %q signaled with %s\n", short(a.ID), req.Signal)
		return nil
	}
	return cmd
}

func newAllocStopCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stop [flags] ALLOC",
		Short: "Stop an allocation; the scheduler places a replacement",
		Args:  exactArgs(1),
	}
	detach := cmd.Flags().Bool("detach", false, "return without monitoring the evaluation")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := apiClient(cmd)
		a, err := resolveAlloc(cmd.Context(), c, args[0])
		if err != nil {
			return cmdErr("allocation %q: %w", args[0], err)
		}
		resp, err := c.StopAllocation(cmd.Context(), a.ID)
		if err != nil {
			return cmdErr("stop %s: %w", short(a.ID), err)
		}
		out := cmd.OutOrStdout()
		if *jsonOut {
			return printJSON(out, resp)
		}
		if *detach || resp.EvalID == "" {
			fmt.Fprintf(out, "Allocation %q stopped\nEvaluation ID: %s\n", short(a.ID), resp.EvalID)
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

// lastLines returns the last n lines of b.
func lastLines(b []byte, n int) []byte {
	if n == 0 {
		return nil
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			n--
			if n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}
