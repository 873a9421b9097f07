package cli

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	pool := &cobra.Command{Use: "pool", Short: "Manage node pools"}
	pool.AddCommand(newNodePoolListCmd(), newNodePoolInfoCmd(), newNodePoolApplyCmd(), newNodePoolDeleteCmd(),
		newNodePoolNodesCmd(), newNodePoolJobsCmd())
	nodeCmd.AddCommand(pool)
}

func newNodePoolListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list [flags]", Short: "List node pools", Args: exactArgs(0)}
	prefix := cmd.Flags().String("prefix", "", "only pools whose name starts with this")
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		pools, err := get[[]*api.NodePool](cmd, c, "node pool list", "/v1/node/pools", &api.QueryOptions{Prefix: *prefix})
		return listAnswer(pools, "", "Name\tDescription", func(p *api.NodePool) string {
			return p.Name + "\t" + p.Description
		}), err
	})
}

func newNodePoolInfoCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "info [flags] NAME", Short: "Show a node pool", Args: exactArgs(1)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		p, err := get[*api.NodePool](cmd, c, "node pool info", "/v1/node/pool/"+url.PathEscape(args[0]), nil)
		return answer{p, func(out io.Writer) error {
			kv(out, "Name", p.Name, "Description", p.Description)
			if len(p.Meta) > 0 {
				fmt.Fprintln(out, "\nMetadata")
				printKV(out, p.Meta)
			}
			return nil
		}}, err
	})
}

// readNodePool reads one pool from an HCL (node_pool "name" {...}) or JSON
// file; problems are file:line:col: message.
func readNodePool(path string) (*api.NodePool, error) {
	var p api.NodePool
	f, err := readSpecFile(path, &p)
	if err != nil || f == nil {
		return &p, err
	}
	root, diags := f.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "node_pool", LabelNames: []string{"name"}}}})
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	if len(root.Blocks) != 1 {
		return nil, fmt.Errorf("%s: want exactly one node_pool block, found %d", path, len(root.Blocks))
	}
	b := root.Blocks[0]
	p.Name = b.Labels[0]
	c, diags := b.Body.Content(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "description"}, {Name: "meta"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "meta"}},
	})
	if a := c.Attributes["description"]; a != nil {
		diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &p.Description)...)
	}
	meta, d := decodeMeta(c)
	p.Meta, diags = meta, append(diags, d...)
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	return &p, nil
}

// diagErr renders HCL errors one per line as file:line:col: message.
func diagErr(diags hcl.Diagnostics) error {
	var lines []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Subject != nil {
			msg = fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, msg)
		}
		lines = append(lines, msg)
	}
	return fmt.Errorf("%s", strings.Join(lines, "\n"))
}

func newNodePoolApplyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "apply [flags] FILE", Short: "Create or update a node pool from an HCL or JSON file", Args: exactArgs(1)}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		p, err := readNodePool(args[0])
		if err != nil {
			return cmdErr("node pool apply: %w", err)
		}
		if err := apiClient(cmd).Write(cmd.Context(), "PUT", "/v1/node/pools", p, nil, nil); err != nil {
			return cmdErr("node pool apply: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Successfully applied node pool %q!\n", p.Name)
		return nil
	}
	return cmd
}

func newNodePoolDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "delete [flags] NAME", Short: "Delete a node pool (it must have no nodes and no live jobs)", Args: exactArgs(1)}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := apiClient(cmd).Write(cmd.Context(), "DELETE", "/v1/node/pool/"+url.PathEscape(args[0]), nil, nil, nil); err != nil {
			return cmdErr("node pool delete: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Successfully deleted node pool %q!\n", args[0])
		return nil
	}
	return cmd
}

func newNodePoolNodesCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "nodes [flags] NAME", Short: "List the nodes of a node pool", Args: exactArgs(1)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		nodes, err := get[[]*api.NodeListStub](cmd, c, "node pool nodes", "/v1/node/pool/"+url.PathEscape(args[0])+"/nodes", nil)
		return listAnswer(nodes, "", "ID\tNode Pool\tDC\tName\tStatus", func(n *api.NodeListStub) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", short(n.ID), n.NodePool, n.Datacenter, n.Name, n.Status)
		}), err
	})
}

func newNodePoolJobsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "jobs [flags] NAME", Short: "List the jobs of a node pool", Args: exactArgs(1)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		jobs, err := get[[]*api.JobListStub](cmd, c, "node pool jobs", "/v1/node/pool/"+url.PathEscape(args[0])+"/jobs", nil)
		return listAnswer(jobs, "", "ID\tNamespace\tType\tNode Pool\tStatus", func(j *api.JobListStub) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", j.ID, j.Namespace, j.Type, j.NodePool, j.Status)
		}), err
	})
}
