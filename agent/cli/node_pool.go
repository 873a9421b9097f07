package cli

import (
	"fmt"
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
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var pools []*api.NodePool
		if _, err := apiClient(cmd).Query(cmd.Context(), "/v1/node/pools", &pools, &api.QueryOptions{Prefix: *prefix}); err != nil {
			return cmdErr("node pool list: %w", err)
		}
		if *jsonOut {
			return printJSON(cmd.OutOrStdout(), pools)
		}
		rows := make([]string, 0, len(pools))
		for _, p := range pools {
			rows = append(rows, p.Name+"\t"+p.Description)
		}
		table(cmd.OutOrStdout(), "Name\tDescription", rows)
		return nil
	}
	return cmd
}

func newNodePoolInfoCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "info [flags] NAME", Short: "Show a node pool", Args: exactArgs(1)}
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var p api.NodePool
		if _, err := apiClient(cmd).Query(cmd.Context(), "/v1/node/pool/"+url.PathEscape(args[0]), &p, nil); err != nil {
			return cmdErr("node pool info: %w", err)
		}
		out := cmd.OutOrStdout()
		if *jsonOut {
			return printJSON(out, &p)
		}
		kv(out, "Name", p.Name, "Description", p.Description)
		if len(p.Meta) > 0 {
			fmt.Fprintln(out, "\nMetadata")
			printKV(out, p.Meta)
		}
		return nil
	}
	return cmd
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
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var nodes []*api.NodeListStub
		if _, err := apiClient(cmd).Query(cmd.Context(), "/v1/node/pool/"+url.PathEscape(args[0])+"/nodes", &nodes, nil); err != nil {
			return cmdErr("node pool nodes: %w", err)
		}
		if *jsonOut {
			return printJSON(cmd.OutOrStdout(), nodes)
		}
		rows := make([]string, 0, len(nodes))
		for _, n := range nodes {
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", short(n.ID), n.NodePool, n.Datacenter, n.Name, n.Status))
		}
		table(cmd.OutOrStdout(), "ID\tNode Pool\tDC\tName\tStatus", rows)
		return nil
	}
	return cmd
}

func newNodePoolJobsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "jobs [flags] NAME", Short: "List the jobs of a node pool", Args: exactArgs(1)}
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var jobs []*api.JobListStub
		if _, err := apiClient(cmd).Query(cmd.Context(), "/v1/node/pool/"+url.PathEscape(args[0])+"/jobs", &jobs, nil); err != nil {
			return cmdErr("node pool jobs: %w", err)
		}
		if *jsonOut {
			return printJSON(cmd.OutOrStdout(), jobs)
		}
		rows := make([]string, 0, len(jobs))
		for _, j := range jobs {
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%s", j.ID, j.Namespace, j.Type, j.NodePool, j.Status))
		}
		table(cmd.OutOrStdout(), "ID\tNamespace\tType\tNode Pool\tStatus", rows)
		return nil
	}
	return cmd
}
