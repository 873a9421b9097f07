package cli

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func init() {
	svc := &cobra.Command{Use: "service", Short: "Inspect native services (provider = \"nomad\")"}
	svc.AddCommand(newServiceListCmd(), newServiceInfoCmd(), newServiceDeleteCmd())
	rootCmd.AddCommand(svc)
}

func newServiceListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list [flags]", Short: "List the registered services and their tags", Args: exactArgs(0)}
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		list, _, err := apiClient(cmd).Services(cmd.Context(), nil)
		if err != nil {
			return cmdErr("service list: %w", err)
		}
		if *jsonOut {
			return printJSON(cmd.OutOrStdout(), list)
		}
		var rows []string
		all := namespaceFlag(cmd) == "*"
		for _, ns := range list {
			for _, s := range ns.Services {
				row := s.ServiceName + "\t[" + strings.Join(s.Tags, ",") + "]"
				if all {
					row = ns.Namespace + "\t" + row
				}
				rows = append(rows, row)
			}
		}
		header := "Service Name\tTags"
		if all {
			header = "Namespace\t" + header
		}
		if len(rows) == 0 {
			fmt.Fprintln(cmd.OutOrStdout(), "No services found")
			return nil
		}
		table(cmd.OutOrStdout(), header, rows)
		return nil
	}
	return cmd
}

func newServiceInfoCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "info [flags] NAME", Short: "List the instances of a service: address, health, node and alloc", Args: exactArgs(1)}
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		regs, _, err := apiClient(cmd).Service(cmd.Context(), args[0], nil)
		if err != nil {
			return cmdErr("service info: %w", err)
		}
		if *jsonOut {
			return printJSON(cmd.OutOrStdout(), regs)
		}
		if len(regs) == 0 {
			return cmdErr("service info: no service %q registered", args[0])
		}
		rows := make([]string, 0, len(regs))
		for _, r := range regs {
			health := r.Health
			if health == "" {
				health = "-"
			}
			rows = append(rows, strings.Join([]string{r.JobID, net.JoinHostPort(r.Address, strconv.Itoa(r.Port)), health,
				"[" + strings.Join(r.Tags, ",") + "]", short(r.NodeID), short(r.AllocID)}, "\t"))
		}
		table(cmd.OutOrStdout(), "Job ID\tAddress\tHealth\tTags\tNode ID\tAlloc ID", rows)
		return nil
	}
	return cmd
}

func newServiceDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "delete [flags] NAME ID", Short: "Delete one registration of a service", Args: exactArgs(2)}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := apiClient(cmd).DeleteServiceRegistration(cmd.Context(), args[0], args[1], nil); err != nil {
			return cmdErr("service delete: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Successfully deleted service registration %q\n", args[1])
		return nil
	}
	return cmd
}
