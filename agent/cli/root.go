package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X .../cli.Version=...".
var Version = "0.1.0-dev"

// Exit codes: 0 ok, 1 error, 2 usage.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr marks a usage error (exit 2).
func usageErr(format string, a ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, a...)}
}

// failed marks an error whose message was already printed (exit code only).
func failed(code int) error { return &exitError{code: code, err: errSilent} }

var errSilent = errors.New("")

// Command groups; files add their subcommands in init().
var (
	rootCmd     = newRoot()
	jobCmd      = &cobra.Command{Use: "job", Short: "Submit, inspect and stop jobs"}
	nodeCmd     = &cobra.Command{Use: "node", Short: "Inspect and manage client nodes"}
	allocCmd    = &cobra.Command{Use: "alloc", Short: "Inspect and control allocations"}
	evalCmd     = &cobra.Command{Use: "eval", Short: "Inspect evaluations"}
	serverCmd   = &cobra.Command{Use: "server", Short: "Inspect servers"}
	operatorCmd = &cobra.Command{Use: "operator", Short: "Cluster operator tools (raft, snapshots, scheduler)"}
)

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "drover",
		Short:         "drover: a lightweight orchestrator for containers, VMs and processes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Each defaults to $DROVER_..., then Nomad's $NOMAD_... (env.go).
	root.PersistentFlags().String("address", "", "address of the drover agent (default $DROVER_ADDR, $NOMAD_ADDR or http://127.0.0.1:4646)")
	root.PersistentFlags().String("ca-cert", "", "CA certificate that signs the agent's (default $DROVER_CACERT, $NOMAD_CACERT)")
	root.PersistentFlags().String("client-cert", "", "client certificate for mutual TLS (default $DROVER_CLIENT_CERT, $NOMAD_CLIENT_CERT)")
	root.PersistentFlags().String("client-key", "", "key of -client-cert (default $DROVER_CLIENT_KEY, $NOMAD_CLIENT_KEY)")
	root.PersistentFlags().String("tls-server-name", "", "server name to verify the agent's certificate against (default $DROVER_TLS_SERVER_NAME, $NOMAD_TLS_SERVER_NAME)")
	root.PersistentFlags().Bool("tls-skip-verify", false, "do not verify the agent's certificate (default $DROVER_SKIP_VERIFY, $NOMAD_SKIP_VERIFY)")
	root.PersistentFlags().String("token", "", "ACL token (SecretID; default $DROVER_TOKEN, then $NOMAD_TOKEN)")
	root.PersistentFlags().String("namespace", "", `namespace to act in ("*" for all, on lists; default $DROVER_NAMESPACE, $NOMAD_NAMESPACE or "default")`)
	root.PersistentFlags().String("region", "", "region to act on (default $DROVER_REGION, $NOMAD_REGION, else the agent's): another region's servers answer, through the agent")
	return root
}

func init() {
	rootCmd.AddCommand(jobCmd, nodeCmd, allocCmd, evalCmd, serverCmd, operatorCmd)
	rootCmd.AddCommand(newVersionCmd(), newMonitorCmd())
}

func newVersionCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the drover version",
		Args:  cobra.NoArgs,
	}
	jsonOut := cmd.Flags().Bool("json", false, "print the version as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *jsonOut {
			return printJSON(cmd.OutOrStdout(), map[string]string{"Version": Version, "GoVersion": runtime.Version()})
		}
		fmt.Fprintf(cmd.OutOrStdout(), "drover v%s\n", Version)
		return nil
	}
	return cmd
}

// rejectUnknownSubcommands makes every command group (a command with
// subcommands and no action of its own) fail with a usage error on an
// unknown subcommand; cobra would print the group's help and exit 0, so a
// CI script calling a verb drover lacks would "pass". Without arguments a
// group still prints its help.
func rejectUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		rejectUnknownSubcommands(sub)
	}
	if c == rootCmd || !c.HasSubCommands() || c.Run != nil || c.RunE != nil {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageErr("unknown command %q for %q", args[0], cmd.CommandPath())
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}

// Execute runs the CLI and returns the process exit code.
func Execute(ctx context.Context, args []string) int {
	return run(ctx, args, os.Stdout, os.Stderr)
}

// setContext gives every command ctx: cobra hands the root's context
// only to commands that have none yet, so a second run in one process
// (tests) would see the first run's, perhaps cancelled, context.
func setContext(cmd *cobra.Command, ctx context.Context) {
	cmd.SetContext(ctx)
	for _, c := range cmd.Commands() {
		setContext(c, ctx)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	rejectUnknownSubcommands(rootCmd)
	if len(args) == 1 && (args[0] == "-v" || args[0] == "-version" || args[0] == "--version") {
		args = []string{"version"} // as `nomad -v`
	}
	rootCmd.SetArgs(normalizeArgs(rootCmd, args))
	rootCmd.SetOut(stdout)
	rootCmd.SetErr(stderr)
	rootCmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: ExitUsage, err: err}
	})
	setContext(rootCmd, ctx)
	err := rootCmd.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != errSilent {
			fmt.Fprintln(stderr, "Error:", tidyMessage(ee.err.Error()))
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "Error:", tidyMessage(err.Error()))
	// cobra's own argument/command errors are usage errors.
	if isCobraUsage(err) {
		return ExitUsage
	}
	return ExitError
}
