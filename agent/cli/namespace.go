package cli

import (
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	ns := &cobra.Command{Use: "namespace", Short: "Manage namespaces"}
	ns.AddCommand(newNamespaceApplyCmd(), newNamespaceListCmd(), newNamespaceStatusCmd(), newNamespaceDeleteCmd())
	rootCmd.AddCommand(ns)
}

func newNamespaceApplyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "apply [flags] NAME|FILE",
		Short: "Create or update a namespace, by name and flags or from an HCL/JSON spec file (name, description, queue, meta)",
		Args:  exactArgs(1),
	}
	desc := cmd.Flags().String("description", "", "the namespace's description")
	queue := cmd.Flags().String("queue", "", "the queue of the namespace's jobs that name none")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		n := &api.Namespace{Name: args[0], Description: *desc, Queue: *queue}
		if fi, err := os.Stat(args[0]); err == nil && !fi.IsDir() {
			if n, err = readNamespace(args[0]); err != nil {
				return cmdErr("namespace apply: %w", err)
			}
		}
		if err := apiClient(cmd).Write(cmd.Context(), "PUT", "/v1/namespace/"+url.PathEscape(n.Name), n, nil, nil); err != nil {
			return cmdErr("namespace apply: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Successfully applied namespace %q!\n", n.Name)
		return nil
	}
	return cmd
}

// readNamespace reads a namespace spec (Nomad's HCL: name, description,
// meta {}; our queue), or the same as JSON; problems are file:line:col.
func readNamespace(path string) (*api.Namespace, error) {
	n := &api.Namespace{}
	f, err := readSpecFile(path, n)
	if err != nil || f == nil {
		return n, err
	}
	c, diags := f.Body.Content(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "name", Required: true}, {Name: "description"}, {Name: "queue"}, {Name: "meta"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "meta"}},
	})
	for field, dst := range map[string]*string{"name": &n.Name, "description": &n.Description, "queue": &n.Queue} {
		if a := c.Attributes[field]; a != nil {
			diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, dst)...)
		}
	}
	meta, d := decodeMeta(c)
	n.Meta, diags = meta, append(diags, d...)
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	return n, nil
}

func newNamespaceListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list [flags]", Short: "List namespaces", Args: exactArgs(0)}
	prefix := cmd.Flags().String("prefix", "", "only namespaces whose name starts with this")
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		nss, err := get[[]*api.Namespace](cmd, c, "namespace list", "/v1/namespaces", &api.QueryOptions{Prefix: *prefix})
		return listAnswer(nss, "", "Name\tQueue\tDescription", func(n *api.Namespace) string {
			q := n.Queue
			if q == "" {
				q = "-"
			}
			return n.Name + "\t" + q + "\t" + n.Description
		}), err
	})
}

func newNamespaceStatusCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "status [flags] NAME", Aliases: []string{"inspect"}, Short: "Show a namespace", Args: exactArgs(1)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		n, err := get[*api.Namespace](cmd, c, "namespace status", "/v1/namespace/"+url.PathEscape(args[0]), nil)
		return answer{n, func(out io.Writer) error {
			q := n.Queue
			if q == "" {
				q = api.DefaultQueue
			}
			kv(out, "Name", n.Name, "Description", n.Description, "Queue", q)
			if len(n.Meta) > 0 {
				fmt.Fprintln(out, "\nMetadata")
				printKV(out, n.Meta)
			}
			return nil
		}}, err
	})
}

func newNamespaceDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "delete [flags] NAME", Short: "Delete a namespace (it must have no jobs)", Args: exactArgs(1)}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := apiClient(cmd).Write(cmd.Context(), "DELETE", "/v1/namespace/"+url.PathEscape(args[0]), nil, nil, nil); err != nil {
			return cmdErr("namespace delete: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Successfully deleted namespace %q!\n", args[0])
		return nil
	}
	return cmd
}
