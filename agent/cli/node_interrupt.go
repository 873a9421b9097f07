package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

// newNodeInterruptCmd is `drover node interrupt -deadline 2m NODE`: a spot
// interruption notice by hand. The node drains with the deadline and the
// reason "spot interruption", its work is placed elsewhere and its tasks
// are told why they stop.
func newNodeInterruptCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "interrupt [flags] NODE",
		Short: "Announce a spot interruption: drain the node by the deadline and move its work, with the reason",
		Args:  exactArgs(1),
	}
	deadline := cmd.Flags().Duration("deadline", 2*time.Minute, "when the node is reclaimed: its work is migrated by then")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *deadline <= 0 || *deadline > api.MaxInterruptDeadline {
			return usageErr("node interrupt: -deadline %v: want more than 0 and at most %v", *deadline, api.MaxInterruptDeadline)
		}
		c := apiClient(cmd)
		ctx := cmd.Context()
		n, err := resolveNode(ctx, c, args[0])
		if err != nil {
			return cmdErr("node %q: %w", args[0], err)
		}
		resp, err := c.InterruptNode(ctx, n.ID, *deadline)
		if err != nil {
			return cmdErr("interrupt node %q: %w", n.ID, err)
		}
		out := cmd.OutOrStdout()
		if *jsonOut {
			return printJSON(out, resp)
		}
		fmt.Fprintf(out, "Node %q interrupted: draining, work migrated within %v\n", n.ID, *deadline)
		return nil
	}
	return cmd
}
