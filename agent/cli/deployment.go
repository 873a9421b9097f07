package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

var deploymentCmd = &cobra.Command{Use: "deployment", Short: "Inspect and control rolling updates"}

func init() {
	deploymentCmd.AddCommand(newDeploymentListCmd(), newDeploymentStatusCmd(), newDeploymentPromoteCmd(),
		newDeploymentFailCmd(), newDeploymentPauseCmd(true), newDeploymentPauseCmd(false), newDeploymentUnblockCmd())
	rootCmd.AddCommand(deploymentCmd)
}

func newDeploymentListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List deployments",
		Args:  exactArgs(0),
	}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		ds, _, err := c.Deployments(cmd.Context(), nil)
		if err != nil {
			return answer{}, cmdErr("list deployments: %w", err)
		}
		return answer{ds, func(out io.Writer) error {
			printDeploymentTable(out, ds)
			return nil
		}}, nil
	})
}

// printDeploymentTable lists deployments, newest first.
func printDeploymentTable(out io.Writer, ds []*api.Deployment) {
	sort.Slice(ds, func(i, j int) bool { return ds[i].CreateIndex > ds[j].CreateIndex })
	listTable(out, ds, "No deployments found", "ID\tJob ID\tJob Version\tStatus\tDescription", func(d *api.Deployment) string {
		return fmt.Sprintf("%s\t%s\t%d\t%s\t%s", short(d.ID), d.JobID, d.JobVersion, d.Status, d.StatusDescription)
	})
}

func newDeploymentStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [flags] ID",
		Short: "Show a deployment's progress per task group",
		Args:  exactArgs(1),
	}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		d, err := resolveDeployment(cmd.Context(), c, args[0])
		if err != nil {
			return answer{}, cmdErr("deployment %q: %w", args[0], err)
		}
		return answer{d, func(out io.Writer) error {
			kv(out, "ID", d.ID, "Job ID", d.JobID, "Job Version", fmt.Sprint(d.JobVersion),
				"Namespace", d.Namespace, "Status", d.Status, "Description", d.StatusDescription)
			fmt.Fprintln(out, "\nDeployed")
			printDeploymentGroups(out, d)
			return nil
		}}, nil
	})
}

// printDeploymentGroups writes one row per group of d.
func printDeploymentGroups(w io.Writer, d *api.Deployment) {
	canaries := false
	for _, g := range d.TaskGroups {
		canaries = canaries || g.DesiredCanaries > 0
	}
	rows := make([]string, 0, len(d.TaskGroups))
	for _, name := range sortedKeys(d.TaskGroups) {
		g := d.TaskGroups[name]
		row := fmt.Sprintf("%s\t%v\t%d\t%d\t%d\t%d", name, g.AutoRevert, g.DesiredTotal, g.PlacedAllocs, g.HealthyAllocs, g.UnhealthyAllocs)
		if canaries {
			row = fmt.Sprintf("%s\t%v\t%v\t%d\t%d\t%d\t%d\t%d\t%d", name, g.AutoRevert, g.Promoted, g.DesiredCanaries,
				len(g.PlacedCanaries), g.DesiredTotal, g.PlacedAllocs, g.HealthyAllocs, g.UnhealthyAllocs)
		}
		rows = append(rows, row)
	}
	if canaries {
		table(w, "Task Group\tAuto Revert\tPromoted\tDesired Canaries\tPlaced Canaries\tDesired\tPlaced\tHealthy\tUnhealthy", rows)
		return
	}
	table(w, "Task Group\tAuto Revert\tDesired\tPlaced\tHealthy\tUnhealthy", rows)
}

func newDeploymentPromoteCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "promote [flags] ID",
		Short: "Promote a deployment's canaries (every group, or those given with -group)",
		Args:  exactArgs(1),
	}
	groups := cmd.Flags().StringSlice("group", nil, "promote only this task group (repeatable)")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return deploymentWrite(cmd, args[0], *jsonOut, "promoted", func(ctx context.Context, c *api.Client, id string) (*api.DeploymentUpdateResponse, error) {
			return c.PromoteDeployment(ctx, id, *groups)
		})
	}
	return cmd
}

func newDeploymentFailCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fail [flags] ID",
		Short: "Mark an active deployment failed (rolls back when auto_revert is set)",
		Args:  exactArgs(1),
	}
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return deploymentWrite(cmd, args[0], *jsonOut, "marked as failed", func(ctx context.Context, c *api.Client, id string) (*api.DeploymentUpdateResponse, error) {
			return c.FailDeployment(ctx, id)
		})
	}
	return cmd
}

func newDeploymentPauseCmd(pause bool) *cobra.Command {
	use, short, done := "pause", "Pause an active deployment", "paused"
	if !pause {
		use, short, done = "resume", "Resume a paused deployment", "resumed"
	}
	cmd := &cobra.Command{Use: use + " [flags] ID", Short: short, Args: exactArgs(1)}
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return deploymentWrite(cmd, args[0], *jsonOut, done, func(ctx context.Context, c *api.Client, id string) (*api.DeploymentUpdateResponse, error) {
			return c.PauseDeployment(ctx, id, pause)
		})
	}
	return cmd
}

// deploymentWrite resolves the deployment, runs op and reports.
func deploymentWrite(cmd *cobra.Command, arg string, jsonOut bool, done string,
	op func(context.Context, *api.Client, string) (*api.DeploymentUpdateResponse, error)) error {
	c := apiClient(cmd)
	d, err := resolveDeployment(cmd.Context(), c, arg)
	if err != nil {
		return cmdErr("deployment %q: %w", arg, err)
	}
	resp, err := op(cmd.Context(), c, d.ID)
	if err != nil {
		return cmdErr("deployment %s: %w", short(d.ID), err)
	}
	out := cmd.OutOrStdout()
	if jsonOut {
		return printJSON(out, resp)
	}
	fmt.Fprintf(out, "Deployment %q %s\n", short(d.ID), done)
	if resp.RevertedJobVersion != nil {
		fmt.Fprintf(out, "Job %q reverted to version %d\n", d.JobID, *resp.RevertedJobVersion)
	}
	if resp.EvalID != "" {
		fmt.Fprintf(out, "Evaluation ID: %s\n", resp.EvalID)
	}
	return nil
}

// resolveDeployment finds a deployment by ID or unique ID prefix.
func resolveDeployment(ctx context.Context, c *api.Client, id string) (*api.Deployment, error) {
	d, _, err := c.Deployment(ctx, id, nil)
	if err == nil {
		return d, nil
	}
	if !errors.Is(err, api.ErrDeploymentNotFound) && !errors.Is(err, api.ErrNotFound) {
		return nil, err
	}
	ds, _, lerr := c.Deployments(ctx, &api.QueryOptions{Prefix: id, Namespace: "*"})
	if lerr != nil {
		return nil, lerr
	}
	switch len(ds) {
	case 0:
		return nil, fmt.Errorf("no deployment with prefix %q: %w", id, api.ErrDeploymentNotFound)
	case 1:
		return ds[0], nil
	}
	return nil, fmt.Errorf("prefix %q matches %d deployments", id, len(ds))
}

// printLatestDeployment writes the job's newest deployment's progress
// (for job status); a job without deployments prints nothing.
func printLatestDeployment(ctx context.Context, w io.Writer, c *api.Client, jobID string, q *api.QueryOptions) error {
	d, _, err := c.JobLatestDeployment(ctx, jobID, q)
	if err != nil || d == nil {
		return err
	}
	fmt.Fprintln(w, "\nLatest Deployment")
	kv(w, "ID", short(d.ID), "Status", d.Status, "Description", d.StatusDescription)
	fmt.Fprintln(w, "\nDeployed")
	printDeploymentGroups(w, d)
	return nil
}
