package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/drover/drover/agent/allocrunner"
	"github.com/drover/drover/agent/execclient"
	"github.com/drover/drover/api"
)

func init() { allocCmd.AddCommand(newAllocMPIRshCmd()) }

// newAllocMPIRshCmd is `drover alloc mpi-rsh`: the remote shell agent
// mpirun uses to start its daemons on a gang's other members through
// alloc exec, as the Kubernetes MPI Operator does with kubectl exec, so
// the tasks need no ssh daemon. Open MPI runs `<agent> HOST COMMAND...`
// (OMPI_MCA_plm_rsh_agent) for each host of the hostfile but its own.
func newAllocMPIRshCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mpi-rsh [flags] HOST COMMAND [ARGS...]",
		Short: "Run a command in the gang member on HOST (mpirun's rsh agent, over alloc exec)",
		Long: "Run a command in the gang member on HOST through alloc exec, for mpirun in place of ssh:\n" +
			"  OMPI_MCA_plm_rsh_agent=\"drover alloc mpi-rsh\" mpirun --hostfile $DROVER_GANG_HOSTFILE ...\n" +
			"HOST is a member's address (the gang hostfile's first field), its host name in $DROVER_GANG_HOSTS\n" +
			"(job-gang-rank) or its alloc name; the members are those of the calling task's gang (-alloc,\n" +
			"default $DROVER_ALLOC_ID). On a host with several members the lowest rank is used. COMMAND is\n" +
			"joined with spaces and run by /bin/sh -c in that member's task, as ssh would run it; stdin is\n" +
			"not forwarded. The task needs DROVER_ADDR (and DROVER_TOKEN with ACLs, allowed to exec) in its env.\n" +
			"Exits with the remote command's exit code.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageErr("%s takes a host and a command", cmd.CommandPath())
			}
			return nil
		},
	}
	// Flags end at HOST: everything after it is the remote command.
	cmd.Flags().SetInterspersed(false)
	cmd.Annotations = map[string]string{flagsEndAtFirstArg: "true"}
	self := cmd.Flags().String("alloc", "", "the calling gang member's allocation (default $DROVER_ALLOC_ID)")
	taskFlag := cmd.Flags().String("task", "", "task to run in (may be omitted when the group has one task)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		id := *self
		if id == "" {
			id = os.Getenv("DROVER_ALLOC_ID")
		}
		if id == "" {
			return usageErr("%s: no -alloc and no DROVER_ALLOC_ID: run it from a gang member's task", cmd.CommandPath())
		}
		c := apiClient(cmd)
		target, err := gangMemberOn(ctx, c, id, args[0])
		if err != nil {
			return cmdErr("mpi-rsh %s: %w", args[0], err)
		}
		task := *taskFlag
		if task == "" {
			a, err := resolveAlloc(ctx, c, target)
			if err != nil {
				return cmdErr("mpi-rsh %s: allocation %s: %w", args[0], short(target), err)
			}
			if task, err = pickTask(a, ""); err != nil {
				return err
			}
		}
		req := &execclient.Request{AllocID: target, Task: task, Command: []string{"/bin/sh", "-c", strings.Join(args[1:], " ")},
			Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
		code, err := execclient.Exec(ctx, c, req)
		if err != nil {
			return cmdErr("mpi-rsh %s: exec in %s/%s: %w", args[0], short(target), task, err)
		}
		if code != 0 {
			return failed(code)
		}
		return nil
	}
	return cmd
}

// gangMemberOn returns the allocation ID of the lowest-ranked member of
// self's gang that host names: its address, its gang host name or its
// alloc name.
func gangMemberOn(ctx context.Context, c *api.Client, self, host string) (string, error) {
	a, err := resolveAlloc(ctx, c, self)
	if err != nil {
		return "", fmt.Errorf("allocation %q: %w", self, err)
	}
	g := a.Gang
	if g == nil {
		return "", fmt.Errorf("allocation %s is not a gang member", short(a.ID))
	}
	var addrs []string
	for _, m := range g.Members { // by rank
		if m.Address == host || m.Name == host || allocrunner.GangHostName(a.JobID, g.ID, m.Rank) == host {
			return m.AllocID, nil
		}
		addrs = append(addrs, m.Address)
	}
	return "", fmt.Errorf("no member of gang %s on it (members' addresses: %s)", g.ID, strings.Join(addrs, ", "))
}
