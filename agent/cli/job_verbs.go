package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	periodicCmd := &cobra.Command{Use: "periodic", Short: "Interact with periodic jobs"}
	periodicCmd.AddCommand(newJobPeriodicForceCmd())
	jobCmd.AddCommand(newJobDispatchCmd(), periodicCmd, newJobRevertCmd(), newJobScaleCmd(),
		newJobAllocsCmd(), newJobDeploymentsCmd(), newJobRestartCmd())
	evalCmd.AddCommand(newEvalListCmd())
	systemCmd := &cobra.Command{Use: "system", Short: "System maintenance (garbage collection)"}
	systemCmd.AddCommand(newSystemGCCmd())
	rootCmd.AddCommand(systemCmd)
}

// monitorOrPrint ends a job write: -json prints the answer, -detach (or
// no eval) prints the eval ID, otherwise the eval is monitored as by
// `job run` (exit 1 when placements failed).
func monitorOrPrint(cmd *cobra.Command, resp any, evalID string, jsonOut, detach bool, done string) error {
	out := cmd.OutOrStdout()
	if jsonOut {
		return printJSON(out, resp)
	}
	if done != "" {
		fmt.Fprintln(out, done)
	}
	if detach || evalID == "" {
		if evalID != "" {
			fmt.Fprintf(out, "Evaluation ID: %s\n", evalID)
		}
		return nil
	}
	code, err := monitorEval(cmd.Context(), out, apiClient(cmd), evalID)
	if err != nil {
		return cmdErr("%w", err)
	}
	if code == ExitError {
		return failed(code)
	}
	return nil
}

func newJobDispatchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dispatch [flags] JOB [INPUT]",
		Short: "Run a parameterized job once, with a payload (INPUT file, - for stdin) and meta",
		Args:  rangeArgs(1, 2),
	}
	meta := cmd.Flags().StringArray("meta", nil, "meta key=value for the dispatched job (repeatable)")
	prefix := cmd.Flags().String("id-prefix-template", "", "put this into the dispatched job's ID")
	detach := cmd.Flags().Bool("detach", false, "return after dispatching, without monitoring the evaluation")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		req := &api.JobDispatchRequest{Meta: map[string]string{}, IdPrefixTemplate: *prefix}
		for _, kv := range *meta {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return usageErr("job dispatch: -meta %q: want key=value", kv)
			}
			req.Meta[k] = v
		}
		if len(args) == 2 {
			var r io.Reader
			if args[1] == "-" {
				r = cmd.InOrStdin()
			} else {
				f, err := os.Open(args[1])
				if err != nil {
					return cmdErr("job dispatch: read payload: %w", err)
				}
				defer f.Close()
				r = f
			}
			b, err := io.ReadAll(io.LimitReader(r, api.DispatchPayloadSizeLimit+1))
			if err != nil {
				return cmdErr("job dispatch: read payload: %w", err)
			}
			req.Payload = b
		}
		resp, err := apiClient(cmd).DispatchJob(cmd.Context(), args[0], req, nil)
		if err != nil {
			return cmdErr("dispatch job %q: %w", args[0], err)
		}
		return monitorOrPrint(cmd, resp, resp.EvalID, *jsonOut, *detach, "Dispatched Job ID = "+resp.DispatchedJobID)
	}
	return cmd
}

func newJobPeriodicForceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "force [flags] JOB",
		Short: "Launch a periodic job now, whatever its schedule",
		Args:  exactArgs(1),
	}
	detach := cmd.Flags().Bool("detach", false, "return after launching, without monitoring the evaluation")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		resp, err := apiClient(cmd).ForcePeriodic(cmd.Context(), args[0], nil)
		if err != nil {
			return cmdErr("force launch of job %q: %w", args[0], err)
		}
		return monitorOrPrint(cmd, resp, resp.EvalID, *jsonOut, *detach, "Launched Job ID = "+resp.DispatchedJobID)
	}
	return cmd
}

func newJobRevertCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revert [flags] JOB VERSION",
		Short: "Register an earlier version of a job again",
		Args:  exactArgs(2),
	}
	detach := cmd.Flags().Bool("detach", false, "return after reverting, without monitoring the evaluation")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		v, err := strconv.ParseUint(args[1], 10, 64)
		if err != nil {
			return usageErr("job revert: version %q: want a number", args[1])
		}
		resp, err := apiClient(cmd).RevertJob(cmd.Context(), args[0], &api.JobRevertRequest{JobID: args[0], JobVersion: v},
			nil)
		if err != nil {
			return cmdErr("revert job %q: %w", args[0], err)
		}
		return monitorOrPrint(cmd, resp, resp.EvalID, *jsonOut, *detach, "")
	}
	return cmd
}

func newJobScaleCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scale [flags] JOB [GROUP] COUNT",
		Short: "Set a group's count (GROUP may be left out when the job has one group)",
		Args:  rangeArgs(2, 3),
	}
	detach := cmd.Flags().Bool("detach", false, "return after scaling, without monitoring the evaluation")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := apiClient(cmd)
		n, err := strconv.ParseInt(args[len(args)-1], 10, 64)
		if err != nil || n < 0 {
			return usageErr("job scale: count %q: want a number >= 0", args[len(args)-1])
		}
		group := ""
		if len(args) == 3 {
			group = args[1]
		} else {
			job, _, err := c.Job(cmd.Context(), args[0], nil)
			if err != nil {
				return cmdErr("job %q: %w", args[0], err)
			}
			if len(job.TaskGroups) != 1 {
				return usageErr("job scale: job %q has %d groups: name the group", args[0], len(job.TaskGroups))
			}
			group = job.TaskGroups[0].Name
		}
		resp, err := c.ScaleJob(cmd.Context(), args[0], &api.JobScaleRequest{Target: api.ScalingTarget{"Group": group}, Count: &n},
			nil)
		if err != nil {
			return cmdErr("scale job %q: %w", args[0], err)
		}
		return monitorOrPrint(cmd, resp, resp.EvalID, *jsonOut, *detach, "")
	}
	return cmd
}

func newJobAllocsCmd() *cobra.Command {
	return jobListCmd("allocs", "List a job's allocations", "allocations",
		func(ctx context.Context, c *api.Client, id string) ([]*api.AllocListStub, error) {
			out, _, err := c.JobAllocations(ctx, id, nil)
			return out, err
		}, func(w io.Writer, as []*api.AllocListStub) { printAllocTable(w, as) })
}

func newJobDeploymentsCmd() *cobra.Command {
	return jobListCmd("deployments", "List a job's deployments", "deployments", func(ctx context.Context, c *api.Client, id string) ([]*api.Deployment, error) {
		out, _, err := c.JobDeployments(ctx, id, nil)
		return out, err
	}, printDeploymentTable)
}

// jobListCmd is `job <name> JOB`: one list read about the job, printed as
// a table or, with -json, as JSON.
func jobListCmd[T any](name, short, what string, fetch func(context.Context, *api.Client, string) ([]T, error), show func(io.Writer, []T)) *cobra.Command {
	cmd := &cobra.Command{Use: name + " [flags] JOB", Short: short, Args: exactArgs(1)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		items, err := fetch(cmd.Context(), c, args[0])
		if err != nil {
			return answer{}, cmdErr("%s of job %q: %w", what, args[0], err)
		}
		return answer{items, func(w io.Writer) error {
			show(w, items)
			return nil
		}}, nil
	})
}

func newEvalListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List evaluations",
		Args:  exactArgs(0),
	}
	job := cmd.Flags().String("job", "", "only the evaluations of this job")
	status := cmd.Flags().String("status", "", "only evaluations with this status")
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		evals, _, err := c.Evaluations(cmd.Context(), nil)
		if err != nil {
			return answer{}, cmdErr("list evaluations: %w", err)
		}
		kept := evals[:0]
		for _, e := range evals {
			if (*job == "" || e.JobID == *job) && (*status == "" || e.Status == *status) {
				kept = append(kept, e)
			}
		}
		return answer{kept, func(out io.Writer) error {
			sort.Slice(kept, func(i, j int) bool { return kept[i].CreateIndex > kept[j].CreateIndex })
			listTable(out, kept, "No evaluations found", "ID\tPriority\tTriggered By\tJob ID\tNode ID\tStatus\tPlacement Failures", func(e *api.Evaluation) string {
				return fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s\t%t", short(e.ID), e.Priority, e.TriggeredBy, e.JobID,
					short(e.NodeID), e.Status, len(e.FailedTGAllocs) > 0)
			})
			return nil
		}}, nil
	})
}

func newSystemGCCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Collect finished evaluations and allocations now",
		Args:  exactArgs(0),
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := apiClient(cmd).Write(cmd.Context(), "PUT", "/v1/system/gc", nil, nil, nil); err != nil {
			return cmdErr("system gc: %w", err)
		}
		return nil
	}
	return cmd
}

func newJobRestartCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "restart [flags] JOB",
		Short: "Restart a job's running allocations in batches (in place, or -reschedule to replace them)",
		Args:  exactArgs(1),
	}
	batch := cmd.Flags().Int("batch-size", 1, "allocations restarted at a time")
	task := cmd.Flags().String("task", "", "restart only this task of each allocation")
	all := cmd.Flags().Bool("all-tasks", false, "restart every task, prestart ones included")
	reschedule := cmd.Flags().Bool("reschedule", false, "stop each allocation and let the scheduler place a new one")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *batch < 1 {
			return usageErr("job restart: -batch-size must be at least 1")
		}
		if *task != "" && *all {
			return usageErr("job restart: -task and -all-tasks exclude each other")
		}
		c := apiClient(cmd)
		ctx := cmd.Context()
		allocs, _, err := c.JobAllocations(ctx, args[0], nil)
		if err != nil {
			return cmdErr("allocations of job %q: %w", args[0], err)
		}
		var running []*api.AllocListStub
		for _, a := range allocs {
			if a.DesiredStatus == api.AllocDesiredStatusRun && a.ClientStatus == api.AllocClientStatusRunning {
				running = append(running, a)
			}
		}
		out := cmd.OutOrStdout()
		if len(running) == 0 {
			fmt.Fprintf(out, "Job %q has no running allocations\n", args[0])
			return nil
		}
		sort.Slice(running, func(i, j int) bool { return running[i].Name < running[j].Name })
		for i := 0; i < len(running); i += *batch {
			end := min(i+*batch, len(running))
			fmt.Fprintf(out, "==> Restarting batch %d of %d\n", i / *batch + 1, (len(running)+*batch-1) / *batch)
			for _, a := range running[i:end] {
				if *reschedule {
					if _, err := c.StopAllocation(ctx, a.ID); err != nil {
						return cmdErr("reschedule %s: %w", short(a.ID), err)
					}
					fmt.Fprintf(out, "    Allocation %q stopped and rescheduled\n", short(a.ID))
					continue
				}
				if err := c.RestartAlloc(ctx, a.ID, &api.AllocRestartRequest{TaskName: *task, AllTasks: *all}); err != nil {
					return cmdErr("restart %s: %w", short(a.ID), err)
				}
				fmt.Fprintf(out, "    Allocation %q restarted\n", short(a.ID))
			}
		}
		fmt.Fprintf(out, "==> Job %q: %d allocation(s) restarted\n", args[0], len(running))
		return nil
	}
	return cmd
}
