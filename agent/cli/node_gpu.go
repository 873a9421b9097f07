package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	gpu := &cobra.Command{Use: "gpu", Short: "Show a node's GPUs and change their MIG layout"}
	gpu.AddCommand(newNodeGPUStatusCmd(), newNodeGPUMIGApplyCmd())
	nodeCmd.AddCommand(gpu)
}

func newNodeGPUStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [flags] NODE",
		Short: "List a node's GPUs: MIG mode, layout and the MIG profiles each offers",
		Args:  exactArgs(1),
	}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		n, err := resolveNode(cmd.Context(), c, args[0])
		if err != nil {
			return answer{}, cmdErr("node %q: %w", args[0], err)
		}
		return answer{n.GPUs, func(w io.Writer) error {
			listTable(w, n.GPUs, "No GPUs reported by node "+short(n.ID), "Index\tUUID\tModel\tLayout\tMIG profiles",
				func(g *api.NodeGPU) string {
					return fmt.Sprintf("%d\t%s\t%s\t%s\t%s", g.Index, g.UUID, g.Name, migLayoutOf(g), migProfilesOf(g))
				})
			if ch := n.MIGChange; ch != nil {
				fmt.Fprintf(w, "\nLast MIG change %s: %s%s\n", short(ch.ID), ch.Status, errSuffix(ch.Error))
			}
			return nil
		}}, nil
	})
}

func newNodeGPUMIGApplyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mig-apply [flags] -gpu INDEX|UUID|all -layout PROFILES|-disable NODE",
		Short: "Change the MIG layout of a node's idle GPUs",
		Long: `Change the MIG layout of some GPUs of a node: each becomes one MIG instance
per profile of -layout ("3g.40gb,2g.20gb,1g.10gb"; "2x1g.10gb" is two), or,
with -disable, one whole GPU again. The servers refuse (exit 1) while a live
allocation holds one of the GPUs or their MIG instances; drain the node or
stop those jobs first. Meanwhile nothing new is placed on them. The node's
client applies the change through NVML and registers its new devices; the
command waits for that and prints the new layout (-detach returns at once).`,
		Args: exactArgs(1),
	}
	gpuFlag := cmd.Flags().String("gpu", "", "the GPUs: comma-separated NVML indexes or UUIDs, or all (every MIG-capable GPU)")
	layout := cmd.Flags().String("layout", "", `MIG profiles for each GPU, e.g. "3g.40gb,2g.20gb,1g.10gb"`)
	disable := cmd.Flags().Bool("disable", false, "leave MIG mode: each GPU is one whole device again")
	detach := cmd.Flags().Bool("detach", false, "return once the servers took the change, without waiting for the node")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if (*layout == "") != *disable {
			return usageErr("node gpu mig-apply: exactly one of -layout or -disable is required")
		}
		if *gpuFlag == "" {
			return usageErr("node gpu mig-apply: -gpu is required (an index, a UUID, a comma-separated list, or all)")
		}
		var profiles []string
		if *layout != "" {
			p, err := api.ParseMIGProfiles(*layout)
			if err != nil {
				return usageErr("node gpu mig-apply: -layout: %v", err)
			}
			profiles = p
		}
		c := apiClient(cmd)
		ctx := cmd.Context()
		n, err := resolveNode(ctx, c, args[0])
		if err != nil {
			return cmdErr("node %q: %w", args[0], err)
		}
		gpus, err := pickGPUs(n, *gpuFlag)
		if err != nil {
			return cmdErr("node %s: %w", short(n.ID), err)
		}
		layouts := make([]api.MIGLayout, 0, len(gpus))
		for _, g := range gpus {
			layouts = append(layouts, api.MIGLayout{GPU: g.UUID, Profiles: profiles, Disable: *disable})
		}
		if err := n.CheckMIGLayouts(layouts); err != nil { // the servers check again
			return cmdErr("node %s: %w", short(n.ID), err)
		}
		out := cmd.OutOrStdout()
		if !*jsonOut {
			for _, g := range gpus {
				fmt.Fprintf(out, "GPU %d (%s, %s): %s -> %s\n", g.Index, g.Name, g.UUID, migLayoutOf(g), layoutText(profiles, *disable))
			}
		}
		resp, err := c.ApplyNodeMIG(ctx, n.ID, layouts)
		if err != nil {
			return cmdErr("MIG layout of node %s: %w", short(n.ID), err)
		}
		if *jsonOut {
			return printJSON(out, resp)
		}
		if resp.ChangeID == "" {
			fmt.Fprintln(out, "Nothing to change: the GPUs have this layout already")
			return nil
		}
		fmt.Fprintf(out, "MIG change %q taken; node %s applies it\n", short(resp.ChangeID), short(n.ID))
		if *detach {
			return nil
		}
		return monitorMIG(ctx, out, c, n.ID, resp.ChangeID, resp.NodeModifyIndex)
	}
	return cmd
}

// pickGPUs resolves -gpu: "all" (every MIG-capable GPU of the node), or
// comma-separated NVML indexes and UUIDs (a unique UUID prefix will do).
func pickGPUs(n *api.Node, spec string) ([]*api.NodeGPU, error) {
	if len(n.GPUs) == 0 {
		return nil, fmt.Errorf("the node reports no GPUs whose MIG layout its client can change")
	}
	if strings.TrimSpace(spec) == "all" {
		var out []*api.NodeGPU
		for _, g := range n.GPUs {
			if g.MIGCapable {
				out = append(out, g)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("none of the node's GPUs supports MIG")
		}
		return out, nil
	}
	var out []*api.NodeGPU
	seen := map[string]bool{}
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		var match []*api.NodeGPU
		for _, g := range n.GPUs {
			if i, err := strconv.Atoi(f); err == nil && g.Index == i || strings.HasPrefix(g.UUID, f) {
				match = append(match, g)
			}
		}
		switch {
		case len(match) == 0:
			return nil, fmt.Errorf("no GPU %q (the node has %d: indexes 0-%d)", f, len(n.GPUs), len(n.GPUs)-1)
		case len(match) > 1:
			return nil, fmt.Errorf("GPU %q is ambiguous", f)
		}
		if !seen[match[0].UUID] {
			seen[match[0].UUID] = true
			out = append(out, match[0])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no GPUs in -gpu %q", spec)
	}
	return out, nil
}

// monitorMIG waits (blocking queries on the node) until the node's client
// reported change id, then prints the GPUs it changed as they are now;
// a failed change is exit 1.
func monitorMIG(ctx context.Context, w io.Writer, c *api.Client, nodeID, id string, index uint64) error {
	fmt.Fprintf(w, "%s: Waiting for node %q to apply it: Ctrl-C to detach\n", now(), short(nodeID))
	for {
		n, m, err := c.Node(ctx, nodeID, &api.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Minute})
		if err != nil {
			if ctx.Err() != nil {
				return nil // detached
			}
			return cmdErr("watch node %s: %w", short(nodeID), err)
		}
		index = m.LastIndex
		ch := n.MIGChange
		switch {
		case ch == nil || ch.ID != id:
			return cmdErr("node %s: MIG change %s is no longer the node's", short(nodeID), short(id))
		case ch.Pending():
			continue
		case ch.Status == api.MIGChangeFailed:
			fmt.Fprintf(w, "%s: MIG change failed on node %q: %s\n", now(), short(nodeID), ch.Error)
			return failed(ExitError)
		}
		fmt.Fprintf(w, "%s: MIG layout applied on node %q\n", now(), short(nodeID))
		for _, l := range ch.Layouts {
			if g := n.GPU(l.GPU); g != nil {
				fmt.Fprintf(w, "GPU %d: %s\n", g.Index, migInstancesOf(g))
			}
		}
		return nil
	}
}

// migLayoutOf says how a GPU is partitioned: "whole GPU" or its MIG
// instances' profiles.
func migLayoutOf(g *api.NodeGPU) string {
	switch {
	case !g.MIGEnabled:
		return "whole GPU"
	case len(g.MIG) == 0:
		return "MIG, no instances"
	}
	ps := make([]string, 0, len(g.MIG))
	for _, m := range g.MIG {
		ps = append(ps, m.Profile)
	}
	return strings.Join(ps, ",")
}

// migInstancesOf lists a GPU's MIG instances with their device IDs.
func migInstancesOf(g *api.NodeGPU) string {
	if !g.MIGEnabled {
		return "whole GPU " + g.UUID
	}
	ps := make([]string, 0, len(g.MIG))
	for _, m := range g.MIG {
		ps = append(ps, m.Profile+" "+m.ID)
	}
	return strings.Join(ps, ", ")
}

func migProfilesOf(g *api.NodeGPU) string {
	if !g.MIGCapable {
		return "-"
	}
	ps := make([]string, 0, len(g.MIGProfiles))
	for _, p := range g.MIGProfiles {
		ps = append(ps, fmt.Sprintf("%s(x%d)", p.Name, p.Max))
	}
	if len(ps) == 0 {
		return "listed in MIG mode"
	}
	return strings.Join(ps, ",")
}

func layoutText(profiles []string, disable bool) string {
	if disable {
		return "whole GPU"
	}
	return strings.Join(profiles, ",")
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}
