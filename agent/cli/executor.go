package cli

import (
	"github.com/drover/drover/drivers/executor/supervisor"
	"github.com/spf13/cobra"
)

// `drover executor <config.json>` is the task supervisor the exec,
// raw_exec and qemu drivers start when there is no drover-executor binary
// next to drover (see executor.FindSupervisor); hidden, not for people.
func init() {
	rootCmd.AddCommand(&cobra.Command{
		Use:                "executor <config.json>",
		Short:              "Supervise one task (started by the exec, raw_exec and qemu drivers)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := supervisor.Main([]string{"executor"}, args); code != 0 {
				return failed(code)
			}
			return nil
		},
	})
}
