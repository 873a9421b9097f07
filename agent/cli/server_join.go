package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func init() {
	var lan bool
	cmd := &cobra.Command{
		Use:   "join ADDR...",
		Short: "Join servers of other regions (their WAN gossip addresses) to federate, as Nomad's server join",
		Long: `Join makes the agent's server contact the gossip addresses given (host:port)
and join their pool: by default the WAN pool, where the servers of every
region meet (each server's ports { serf_wan }); then requests with -region
are forwarded between the regions, and "drover server members" lists them
all. One join per pair of regions is enough: the other servers of each
region join through their own region's servers. With -lan, the addresses
are servers of the agent's own region (their LAN gossip port).`,
		Args: rangeArgs(1, 64),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := apiClient(cmd).Join(cmd.Context(), args, !lan)
			if err != nil {
				return cmdErr("join %v: %w", args, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Joined %d servers successfully\n", n)
			return nil
		},
	}
	cmd.Flags().BoolVar(&lan, "lan", false, "join servers of this agent's region (LAN gossip addresses) instead of the WAN pool")
	serverCmd.AddCommand(cmd)
}
