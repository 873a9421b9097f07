package cli

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	nodeCmd.AddCommand(newNodeStatusCmd(), newNodeDrainCmd(), newNodeEligibilityCmd(), newNodeInterruptCmd())
}

func newNodeStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [flags] [ID]",
		Short: "List client nodes, or show one node",
		Args:  rangeArgs(0, 1),
	}
	verbose := cmd.Flags().Bool("verbose", false, "show full IDs, attributes and driver details")
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		ctx := cmd.Context()
		if len(args) == 0 {
			nodes, _, err := c.Nodes(ctx, nil)
			if err != nil {
				return answer{}, cmdErr("list nodes: %w", err)
			}
			return listAnswer(nodes, "No nodes registered", "ID\tNode Pool\tDC\tName\tClass\tDrain\tEligibility\tStatus", func(n *api.NodeListStub) string {
				id := n.ID
				if !*verbose {
					id = short(id)
				}
				return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%v\t%s\t%s", id, n.NodePool, n.Datacenter, n.Name, n.NodeClass, n.Drain, n.SchedulingEligibility, n.Status)
			}), nil
		}
		n, err := resolveNode(ctx, c, args[0])
		if err != nil {
			return answer{}, cmdErr("node %q: %w", args[0], err)
		}
		var list []*api.Allocation
		if _, err = c.Query(ctx, "/v1/node/"+n.ID+"/allocations", &list, nil); err != nil {
			return answer{}, cmdErr("node %q allocations: %w", n.ID, err)
		}
		return answer{n, func(w io.Writer) error {
			printNode(w, n, list, *verbose)
			return nil
		}}, nil
	})
}

func printNode(w io.Writer, n *api.Node, allocs []*api.Allocation, verbose bool) {
	id := n.ID
	if !verbose {
		id = short(id)
	}
	var drivers []string
	for _, d := range sortedKeys(n.Drivers) {
		if n.Drivers[d].Detected && n.Drivers[d].Healthy {
			drivers = append(drivers, d)
		}
	}
	kv(w, "ID", id, "Name", n.Name, "Node Pool", n.NodePool, "Class", n.NodeClass, "DC", n.Datacenter,
		"Drain", fmt.Sprint(n.Drain), "Eligibility", n.SchedulingEligibility, "Status", n.Status,
		"Address", n.HTTPAddr, "Drivers", strings.Join(drivers, ","))
	if r := n.NodeResources; r != nil {
		fmt.Fprintln(w, "\nNode Resources")
		fmt.Fprintf(w, "CPU %d MHz, Memory %d MiB, Disk %d MiB\n", r.Cpu.CpuShares, r.Memory.MemoryMB, r.Disk.DiskMB)
		printDeviceSummary(w, n, allocs)
	}
	if len(n.Events) > 0 {
		fmt.Fprintln(w, "\nNode Events")
		rows := make([]string, 0, len(n.Events))
		evs := n.Events
		if len(evs) > 10 && !verbose {
			evs = evs[len(evs)-10:]
		}
		for i := len(evs) - 1; i >= 0; i-- {
			e := evs[i]
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s", fmtTime(e.Timestamp), e.Subsystem, e.Message))
		}
		table(w, "Time\tSubsystem\tMessage", rows)
	}
	if verbose {
		fmt.Fprintln(w, "\nDrivers")
		rows := []string{}
		for _, d := range sortedKeys(n.Drivers) {
			di := n.Drivers[d]
			rows = append(rows, fmt.Sprintf("%s\t%v\t%v\t%s", d, di.Detected, di.Healthy, di.HealthDescription))
		}
		table(w, "Driver\tDetected\tHealthy\tMessage", rows)
		printDevices(w, n, allocs)
		fmt.Fprintln(w, "\nAttributes")
		pairs := []string{}
		for _, k := range sortedKeys(n.Attributes) {
			pairs = append(pairs, k, n.Attributes[k])
		}
		kv(w, pairs...)
		if len(n.Meta) > 0 {
			fmt.Fprintln(w, "\nMeta")
			pairs = pairs[:0]
			for _, k := range sortedKeys(n.Meta) {
				pairs = append(pairs, k, n.Meta[k])
			}
			kv(w, pairs...)
		}
	}
	fmt.Fprintln(w, "\nAllocations")
	if len(allocs) == 0 {
		fmt.Fprintln(w, "No allocations placed")
		return
	}
	sort.Slice(allocs, func(i, j int) bool { return allocs[i].CreateIndex > allocs[j].CreateIndex })
	rows := make([]string, 0, len(allocs))
	for _, a := range allocs {
		rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", short(a.ID), a.JobID, a.TaskGroup, a.DesiredStatus, a.ClientStatus, fmtUnixNano(a.ModifyTime)))
	}
	table(w, "ID\tJob ID\tTask Group\tDesired\tStatus\tModified", rows)
}

func newNodeDrainCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drain [flags] -enable|-disable ID",
		Short: "Drain a node: migrate its allocations away and stop new placements",
		Args:  exactArgs(1),
	}
	enable := cmd.Flags().Bool("enable", false, "start draining")
	disable := cmd.Flags().Bool("disable", false, "stop draining")
	deadline := cmd.Flags().Duration("deadline", time.Hour, "force-stop remaining allocations after this long (-1s: now)")
	force := cmd.Flags().Bool("force", false, "stop every allocation now (deadline -1)")
	noDeadline := cmd.Flags().Bool("no-deadline", false, "never force-stop allocations")
	ignoreSystem := cmd.Flags().Bool("ignore-system", false, "leave system jobs running")
	keepIneligible := cmd.Flags().Bool("keep-ineligible", false, "with -disable, keep the node ineligible")
	yes := cmd.Flags().Bool("yes", false, "do not ask for confirmation")
	detach := cmd.Flags().Bool("detach", false, "return at once instead of monitoring the drain")
	monitor := cmd.Flags().Bool("monitor", false, "only monitor the node's drain (no change)")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *monitor && (*enable || *disable || *detach) {
			return usageErr("node drain: -monitor excludes -enable, -disable and -detach")
		}
		if *enable == *disable && !*monitor {
			return usageErr("node drain: exactly one of -enable or -disable is required")
		}
		ask := *enable && !*yes && !*jsonOut
		if ask && !isTerminal(cmd.InOrStdin()) {
			// Nobody can answer: refuse rather than read a "no" from a
			// pipe or /dev/null and look like a drain was canceled.
			return cmdErr("node drain -enable asks for confirmation and stdin is not a terminal: add -yes to drain node %q", args[0])
		}
		c := apiClient(cmd)
		ctx := cmd.Context()
		n, err := resolveNode(ctx, c, args[0])
		if err != nil {
			return cmdErr("node %q: %w", args[0], err)
		}
		out := cmd.OutOrStdout()
		if *monitor {
			return monitorDrain(ctx, out, c, n.ID)
		}
		if ask {
			fmt.Fprintf(out, "Are you sure you want to enable drain mode for node %q? [y/N] ", n.ID)
			ans, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			if a := strings.ToLower(strings.TrimSpace(ans)); a != "y" && a != "yes" {
				fmt.Fprintln(out, "Canceling drain")
				return failed(ExitError)
			}
		}
		var spec *api.DrainSpec
		if *enable {
			spec = &api.DrainSpec{Deadline: *deadline, IgnoreSystemJobs: *ignoreSystem}
			if *force {
				spec.Deadline = -1
			}
			if *noDeadline {
				spec.Deadline = 0
			}
		}
		resp, err := c.UpdateNodeDrain(ctx, n.ID, spec, *disable && !*keepIneligible)
		if err != nil {
			return cmdErr("update drain of node %q: %w", n.ID, err)
		}
		if *jsonOut {
			return printJSON(out, resp)
		}
		if *enable {
			fmt.Fprintf(out, "Node %q drain strategy set\n", n.ID)
		} else {
			fmt.Fprintf(out, "Node %q drain strategy unset\n", n.ID)
		}
		if *enable && !*detach {
			return monitorDrain(ctx, out, c, n.ID)
		}
		return nil
	}
	return cmd
}

func newNodeEligibilityCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eligibility -enable|-disable ID",
		Short: "Mark a node eligible or ineligible for new placements",
		Args:  exactArgs(1),
	}
	enable := cmd.Flags().Bool("enable", false, "mark eligible")
	disable := cmd.Flags().Bool("disable", false, "mark ineligible")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *enable == *disable {
			return usageErr("node eligibility: exactly one of -enable or -disable is required")
		}
		c := apiClient(cmd)
		n, err := resolveNode(cmd.Context(), c, args[0])
		if err != nil {
			return cmdErr("node %q: %w", args[0], err)
		}
		elig := api.NodeSchedulingEligible
		if *disable {
			elig = api.NodeSchedulingIneligible
		}
		resp, err := c.UpdateNodeEligibility(cmd.Context(), n.ID, elig)
		if err != nil {
			return cmdErr("update eligibility of node %q: %w", n.ID, err)
		}
		out := cmd.OutOrStdout()
		if *jsonOut {
			return printJSON(out, resp)
		}
		fmt.Fprintf(out, "Node %q scheduling eligibility set: %s\n", n.ID, elig)
		return nil
	}
	return cmd
}
