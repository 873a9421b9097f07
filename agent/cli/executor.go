package cli

import (
	"github.com/drover/drover/drivers/executor"
	"github.com/spf13/cobra"
)

// `drover executor <config.json>` is the task supervisor the exec and
// raw_exec drivers start; hidden, not for people.
func init() {
	rootCmd.AddCommand(&cobra.Command{
		Use:                "executor <config.json>",
		Short:              "Supervise one task (started by the exec and raw_exec drivers)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := executor.Main(cmd.Context(), args); code != 0 {
				return failed(code)
			}
			return nil
		},
	})
}
