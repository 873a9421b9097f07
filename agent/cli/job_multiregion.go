package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

// printMultiregion adds Nomad's "Multiregion Deployment" table to `job
// status` of a multiregion job: each region's deployment of the job's
// version (read through the answering agent, forwarded by region). A
// region that cannot be read says why in its row.
func printMultiregion(ctx context.Context, w io.Writer, c *api.Client, job *api.Job) {
	if job.Multiregion == nil {
		return
	}
	var rows []string
	for _, r := range job.Multiregion.Names() {
		rc := *c
		rc.Region = r
		deps, _, err := rc.JobDeployments(ctx, job.ID, &api.QueryOptions{Namespace: job.Namespace})
		if err != nil {
			rows = append(rows, fmt.Sprintf("%s\t-\tunknown (%v)", r, err))
			continue
		}
		row := fmt.Sprintf("%s\t-\tnone", r)
		for _, d := range deps { // newest first
			if d.JobVersion == job.Version {
				row = fmt.Sprintf("%s\t%s\t%s", r, short(d.ID), d.Status)
				break
			}
		}
		rows = append(rows, row)
	}
	fmt.Fprintln(w, "\nMultiregion Deployment")
	table(w, "Region\tID\tStatus", rows)
}

// newDeploymentUnblockCmd is Nomad's `deployment unblock`: a blocked
// deployment of a multiregion job is marked successful.
func newDeploymentUnblockCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "unblock [flags] ID",
		Short: "Mark a blocked deployment of a multiregion job successful",
		Args:  exactArgs(1),
	}
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return deploymentWrite(cmd, args[0], *jsonOut, "unblocked", func(ctx context.Context, c *api.Client, id string) (*api.DeploymentUpdateResponse, error) {
			return c.UnblockDeployment(ctx, id)
		})
	}
	return cmd
}
