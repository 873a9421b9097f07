package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	intro := &cobra.Command{Use: "intro", Short: "Manage node introduction tokens (how new client nodes join)"}
	intro.AddCommand(newNodeIntroCreateCmd())
	nodeCmd.AddCommand(intro)
}

func newNodeIntroCreateCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "create [flags]", Short: "Sign an introduction token a new client node joins with",
		Long: `Sign an introduction token: where the servers require one (ACLs on, or the API
verifying client certificates), a client node registers for the first time, or
into another node pool, only with such a token (the client's intro_token,
-client-intro-token or DROVER_CLIENT_INTRO_TOKEN) or a client certificate of the
region. Needs node write.`,
		Args: exactArgs(0)}
	name := cmd.Flags().String("node-name", "", "the only node name the token admits (default: any)")
	pool := cmd.Flags().String("node-pool", "", "the node pool the token admits (default \"default\")")
	ttl := cmd.Flags().Duration("ttl", 0, fmt.Sprintf("how long the token admits nodes (default %s, at most %s)", api.DefaultNodeIntroTTL, api.MaxNodeIntroTTL))
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		resp, err := apiClient(cmd).CreateNodeIntro(cmd.Context(), &api.NodeIntroRequest{NodeName: *name, NodePool: *pool, TTL: *ttl})
		if err != nil {
			return cmdErr("node intro create: %w", err)
		}
		if *jsonOut {
			return printJSON(cmd.OutOrStdout(), resp)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s\n", resp.Token)
		fmt.Fprintf(cmd.ErrOrStderr(), "Introduction token for node pool %q, valid until %s\n", poolOr(*pool), resp.Expiration.Format(time.RFC3339))
		return nil
	}
	return cmd
}

func poolOr(p string) string {
	if p == "" {
		return api.DefaultNodePool
	}
	return p
}
