package cli

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	svc := &cobra.Command{Use: "service", Short: "Inspect native services (provider = \"nomad\")"}
	svc.AddCommand(newServiceListCmd(), newServiceInfoCmd(), newServiceDeleteCmd())
	rootCmd.AddCommand(svc)
}

func newServiceListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list [flags]", Short: "List the registered services and their tags", Args: exactArgs(0)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, _ []string) (answer, error) {
		list, _, err := c.Services(cmd.Context(), nil)
		if err != nil {
			return answer{}, cmdErr("service list: %w", err)
		}
		return answer{list, func(out io.Writer) error {
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
				fmt.Fprintln(out, "No services found")
				return nil
			}
			table(out, header, rows)
			return nil
		}}, nil
	})
}

func newServiceInfoCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "info [flags] NAME", Short: "List the instances of a service: address, health, node and alloc", Args: exactArgs(1)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		regs, _, err := c.Service(cmd.Context(), args[0], nil)
		if err != nil {
			return answer{}, cmdErr("service info: %w", err)
		}
		return answer{regs, func(out io.Writer) error {
			if len(regs) == 0 {
				return cmdErr("service info: no service %q registered", args[0])
			}
			listTable(out, regs, "", "Job ID\tAddress\tHealth\tTags\tNode ID\tAlloc ID", func(r *api.ServiceRegistration) string {
				health := r.Health
				if health == "" {
					health = "-"
				}
				return strings.Join([]string{r.JobID, net.JoinHostPort(r.Address, strconv.Itoa(r.Port)), health,
					"[" + strings.Join(r.Tags, ",") + "]", short(r.NodeID), short(r.AllocID)}, "\t")
			})
			return nil
		}}, nil
	})
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
