package cli

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() { evalCmd.AddCommand(newEvalDeleteCmd()) }

// newEvalDeleteCmd is `drover eval delete`, as Nomad's: by ID (prefixes
// resolved) or -filter, only while the eval broker is paused.
func newEvalDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete [flags] [ID ...]",
		Short: "Delete evaluations by ID or -filter (pause the eval broker first: operator scheduler set-config -pause-eval-broker=true)",
	}
	filter := cmd.Flags().String("filter", "", "a go-bexpr filter over the evaluations, e.g. 'Status == \"pending\"' (instead of IDs)")
	yes := cmd.Flags().Bool("yes", false, "do not ask for confirmation when deleting by filter")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if (len(args) == 0) == (*filter == "") {
			return usageErr("eval delete: give evaluation IDs or -filter (one of the two)")
		}
		c := apiClient(cmd)
		out := cmd.OutOrStdout()
		req := &api.EvalDeleteRequest{Filter: *filter}
		for _, id := range args {
			e, err := resolveEval(cmd.Context(), c, id)
			if err != nil {
				return cmdErr("evaluation %q: %w", id, err)
			}
			req.EvalIDs = append(req.EvalIDs, e.ID)
		}
		if *filter != "" && !*yes {
			fmt.Fprintf(out, "Delete every evaluation matching %q? [y/N] ", *filter)
			ans, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(ans)); a != "y" && a != "yes" {
				fmt.Fprintln(out, "Canceling delete")
				return failed(ExitError)
			}
		}
		var resp api.EvalDeleteResponse
		if err := c.Write(cmd.Context(), "DELETE", "/v1/evaluations", req, &resp, nil); err != nil {
			return cmdErr("eval delete: %w", err)
		}
		fmt.Fprintf(out, "Successfully deleted %d evaluation(s)\n", resp.Count)
		return nil
	}
	return cmd
}
