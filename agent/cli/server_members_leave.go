package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func init() {
	serverCmd.AddCommand(&cobra.Command{
		Use:   "force-leave NODE",
		Short: "Mark a failed server as left: the leader removes it from Raft at once",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := apiClient(cmd).ForceLeave(cmd.Context(), args[0]); err != nil {
				return cmdErr("force-leave %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Server %s marked as left\n", args[0])
			return nil
		},
	})
}
