package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() { operatorCmd.AddCommand(newOperatorDefragCmd()) }

// newOperatorDefragCmd is `drover operator defrag [-dry-run]`: plan moves
// of restartable allocs that free nodes for pending work, print them and
// what they unblock, and (without -dry-run) apply them.
func newOperatorDefragCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "defrag", Short: "Move restartable allocs to make room for pending work", Args: exactArgs(0),
		Long: `Plan moves of restartable allocs (batch and service, gangs whole, past their
min_runtime, at most max_disruption per job: default 1) that free nodes for
pending work that cannot place now, and apply them: each alloc is stopped
with the reason "defragmentation" and placed on its destination in the same
plan, or left running when it does not fit there. -dry-run prints the plan
and what it would unblock without changing anything.`}
	dry := cmd.Flags().Bool("dry-run", false, "print the plan without applying it")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		plan, err := apiClient(cmd).Defrag(cmd.Context(), *dry)
		if err != nil {
			return cmdErr("defrag: %w", err)
		}
		out := cmd.OutOrStdout()
		if *jsonOut {
			return printJSON(out, plan)
		}
		printDefragPlan(out, plan)
		return nil
	}
	return cmd
}

func printDefragPlan(out io.Writer, p *api.DefragPlan) {
	if len(p.Moves) == 0 {
		fmt.Fprintln(out, "No moves: no pending work would place after moving restartable allocs")
		return
	}
	name := func(id, n string) string {
		if n != "" {
			return n
		}
		return short(id)
	}
	listTable(out, p.Moves, "", "Alloc ID\tName\tFrom\tTo\tWhy", func(m *api.DefragMove) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", short(m.AllocID), m.AllocName, name(m.From, m.FromName), name(m.To, m.ToName), m.Why)
	})
	fmt.Fprintf(out, "\nUnblocks: %s\n", strings.Join(p.Unblocks, ", "))
	if p.DryRun {
		fmt.Fprintln(out, "Dry run: nothing was changed")
		return
	}
	fmt.Fprintf(out, "Applying %d moves in %d evals (a move that does not fit its destination is not made)\n", len(p.Moves), len(p.EvalIDs))
}
