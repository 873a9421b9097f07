package cli

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	evalCmd.AddCommand(newEvalStatusCmd())
	serverCmd.AddCommand(newServerMembersCmd())
	rootCmd.AddCommand(newStatusCmd())
}

func newEvalStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [flags] ID",
		Short: "Show an evaluation and why its placements failed",
		Args:  exactArgs(1),
	}
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := apiClient(cmd)
		e, err := resolveEval(cmd.Context(), c, args[0])
		if err != nil {
			return cmdErr("evaluation %q: %w", args[0], err)
		}
		out := cmd.OutOrStdout()
		if *jsonOut {
			return printJSON(out, e)
		}
		kv(out, "ID", e.ID, "Create Time", fmtUnixNano(e.CreateTime), "Modify Time", fmtUnixNano(e.ModifyTime),
			"Status", e.Status, "Status Description", e.StatusDescription, "Type", e.Type,
			"TriggeredBy", e.TriggeredBy, "Job ID", e.JobID, "Namespace", e.Namespace,
			"Priority", fmt.Sprint(e.Priority), "Placement Failures", fmt.Sprint(len(e.FailedTGAllocs) > 0),
			"Previous Eval", e.PreviousEval, "Next Eval", e.NextEval, "Blocked Eval", e.BlockedEval)
		if len(e.FailedTGAllocs) > 0 {
			fmt.Fprintln(out, "\nFailed Placements")
			job, _, _ := c.Job(cmd.Context(), e.JobID, &api.QueryOptions{Namespace: e.Namespace}) // for gang lines; nil is fine
			for _, l := range failureLines(e.FailedTGAllocs, job) {
				fmt.Fprintln(out, l)
			}
		}
		return nil
	}
	return cmd
}

func newServerMembersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "members",
		Short: "List the servers of the cluster",
		Args:  exactArgs(0),
	}
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c := apiClient(cmd)
		m, err := c.Members(cmd.Context())
		if err != nil {
			return cmdErr("list members: %w", err)
		}
		leader, _ := c.Leader(cmd.Context())
		out := cmd.OutOrStdout()
		if *jsonOut {
			return printJSON(out, m)
		}
		sort.Slice(m.Members, func(i, j int) bool { return m.Members[i].Name < m.Members[j].Name })
		rows := make([]string, 0, len(m.Members))
		for _, s := range m.Members {
			// A lone server that knows a leader is it (dev mode's in-memory
			// Raft has no host:port address to compare).
			isLeader := leader != "" && (s.Tags["raft_addr"] == leader || len(m.Members) == 1)
			rows = append(rows, fmt.Sprintf("%s\t%s\t%d\t%s\t%v\t%s\t%s", s.Name, s.Addr, s.Port, s.Status, isLeader, s.Tags["region"], s.Tags["dc"]))
		}
		table(out, "Name\tAddress\tPort\tStatus\tLeader\tRegion\tDatacenter", rows)
		return nil
	}
	return cmd
}

func newStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [ID]",
		Short: "List jobs, or show the job, allocation, evaluation or node with this ID (prefix)",
		Args:  rangeArgs(0, 1),
	}
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := apiClient(cmd)
		ctx := cmd.Context()
		out := cmd.OutOrStdout()
		if len(args) == 0 {
			jobs, _, err := c.Jobs(ctx, &api.QueryOptions{Namespace: "*"})
			if err != nil {
				return cmdErr("list jobs: %w", err)
			}
			if *jsonOut {
				return printJSON(out, jobs)
			}
			if len(jobs) == 0 {
				fmt.Fprintln(out, "No running jobs")
				return nil
			}
			rows := make([]string, 0, len(jobs))
			for _, j := range jobs {
				rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%d\t%s", j.ID, j.Namespace, j.Type, j.Priority, j.Status))
			}
			table(out, "ID\tNamespace\tType\tPriority\tStatus", rows)
			return nil
		}
		id := args[0]
		if job, _, err := c.Job(ctx, id, nil); err == nil {
			if *jsonOut {
				return printJSON(out, job)
			}
			summary, _, _ := c.JobSummary(ctx, job.ID, nil)
			allocs, _, _ := c.JobAllocations(ctx, job.ID, nil)
			evals, _, _ := c.JobEvaluations(ctx, job.ID, nil)
			printJobStatus(out, job, summary, allocs, evals)
			return nil
		}
		if a, err := resolveAlloc(ctx, c, id); err == nil {
			if *jsonOut {
				return printJSON(out, a)
			}
			printAlloc(out, a, false)
			return nil
		}
		if n, err := resolveNode(ctx, c, id); err == nil {
			if *jsonOut {
				return printJSON(out, n)
			}
			printNode(out, n, nil, false)
			return nil
		}
		if e, err := resolveEval(ctx, c, id); err == nil {
			if *jsonOut {
				return printJSON(out, e)
			}
			kv(out, "ID", e.ID, "Status", e.Status, "Job ID", e.JobID, "TriggeredBy", e.TriggeredBy)
			return nil
		}
		return cmdErr("no job, allocation, node or evaluation matches %q", id)
	}
	return cmd
}
