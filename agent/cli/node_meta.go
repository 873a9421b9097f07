package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	meta := &cobra.Command{Use: "meta", Short: "Read and change a node's dynamic metadata"}
	meta.AddCommand(newNodeMetaApplyCmd(), newNodeMetaReadCmd())
	nodeCmd.AddCommand(meta)
}

// metaNode resolves -node-id (a prefix is fine) to a full ID; "" stays ""
// (the agent at -address answers for its own node).
func metaNode(ctx context.Context, c *api.Client, id string) (string, error) {
	if id == "" {
		return "", nil
	}
	n, err := resolveNode(ctx, c, id)
	if err != nil {
		return "", cmdErr("node %q: %w", id, err)
	}
	return n.ID, nil
}

func newNodeMetaApplyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "apply [flags] KEY=VALUE ...",
		Short: "Set (or with -unset remove) keys of a node's dynamic metadata; the scheduler sees them at once",
	}
	nodeID := cmd.Flags().String("node-id", "", "the node (default: the node of the agent at -address)")
	unset := cmd.Flags().String("unset", "", "comma-separated keys to remove")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		change := map[string]*string{}
		for _, a := range args {
			k, v, ok := strings.Cut(a, "=")
			if !ok || k == "" {
				return usageErr("node meta apply: %q is not KEY=VALUE", a)
			}
			change[k] = &v
		}
		if *unset != "" {
			for _, k := range strings.Split(*unset, ",") {
				if k = strings.TrimSpace(k); k != "" {
					change[k] = nil
				}
			}
		}
		if len(change) == 0 {
			return usageErr("node meta apply: give KEY=VALUE pairs or -unset KEYS")
		}
		c := apiClient(cmd)
		id, err := metaNode(cmd.Context(), c, *nodeID)
		if err != nil {
			return err
		}
		var resp api.NodeMetaResponse
		if err := c.Write(cmd.Context(), "POST", "/v1/client/metadata", &api.NodeMetaApplyRequest{NodeID: id, Meta: change}, &resp, nil); err != nil {
			return cmdErr("node meta apply: %w", err)
		}
		return nil
	}
	return cmd
}

func newNodeMetaReadCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "read [flags]",
		Short: "Show a node's metadata (all keys, then the dynamic ones)",
		Args:  exactArgs(0),
	}
	nodeID := cmd.Flags().String("node-id", "", "the node (default: the node of the agent at -address)")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c := apiClient(cmd)
		id, err := metaNode(cmd.Context(), c, *nodeID)
		if err != nil {
			return err
		}
		var q *api.QueryOptions
		if id != "" {
			q = &api.QueryOptions{Params: map[string]string{"node_id": id}}
		}
		var resp api.NodeMetaResponse
		if _, err := c.Query(cmd.Context(), "/v1/client/metadata", &resp, q); err != nil {
			return cmdErr("node meta read: %w", err)
		}
		out := cmd.OutOrStdout()
		if *jsonOut {
			return printJSON(out, &resp)
		}
		fmt.Fprintln(out, "All Meta")
		printKV(out, resp.Meta)
		dyn := map[string]string{}
		for k, v := range resp.Dynamic {
			if v == nil {
				dyn[k] = "<unset>"
			} else {
				dyn[k] = *v
			}
		}
		fmt.Fprintln(out, "\nDynamic Meta")
		printKV(out, dyn)
		return nil
	}
	return cmd
}

// printKV prints a map as sorted "key = value" lines.
func printKV(w io.Writer, m map[string]string) {
	if len(m) == 0 {
		fmt.Fprintln(w, "(none)")
		return
	}
	pairs := make([]string, 0, 2*len(m))
	for _, k := range sortedKeys(m) {
		pairs = append(pairs, k, m[k])
	}
	kv(w, pairs...)
}
