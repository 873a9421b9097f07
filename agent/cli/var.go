package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/api"
)

func init() {
	v := &cobra.Command{Use: "var", Short: "Manage variables (Nomad Variables: encrypted items at a path, readable by templates)"}
	v.AddCommand(newVarPutCmd(), newVarGetCmd(), newVarListCmd(), newVarPurgeCmd(), newVarLockCmd())
	rootCmd.AddCommand(v)
}

// parseItems reads k=v arguments; a value @file is the file's content.
func parseItems(args []string) (map[string]string, error) {
	items := map[string]string{}
	for _, a := range args {
		k, val, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, usageErr("item %q: want KEY=VALUE (or KEY=@FILE)", a)
		}
		if f, isFile := strings.CutPrefix(val, "@"); isFile {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, cmdErr("item %q: %w", k, err)
			}
			val = string(b)
		}
		items[k] = val
	}
	return items, nil
}

func newVarPutCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "put [flags] PATH KEY=VALUE...",
		Short: "Create a variable, or replace an existing one's items with -check-index or -force (VALUE @FILE reads a file)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageErr("%s takes a path and at least one KEY=VALUE, got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return nil
		},
	}
	force := cmd.Flags().Bool("force", false, "write whatever the variable's current index")
	check := cmd.Flags().Int64("check-index", -1, "write only if the variable's modify index is this (0: only if it does not exist)")
	jsonOut := addJSONFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		items, err := parseItems(args[1:])
		if err != nil {
			return err
		}
		if *force && *check >= 0 {
			return usageErr("-force and -check-index exclude each other")
		}
		cas := *check
		if !*force && cas < 0 {
			cas = 0 // by default put creates; replacing needs -check-index or -force
		}
		if *force {
			cas = -1
		}
		v, err := apiClient(cmd).PutVariable(cmd.Context(), &api.Variable{Path: args[0], Items: items}, cas, nil)
		var ce *api.CASConflictError
		if errors.As(err, &ce) {
			if ce.Current != nil && *check < 0 {
				return cmdErr("var put: variable %q exists (modify index %d): replace it with -check-index %d, or -force", args[0], ce.Current.ModifyIndex, ce.Current.ModifyIndex)
			}
			if ce.Current != nil {
				return cmdErr("var put: check-and-set conflict: variable %q is at modify index %d, not %d", args[0], ce.Current.ModifyIndex, *check)
			}
			return cmdErr("var put: %w", err)
		}
		if err != nil {
			return cmdErr("var put: %w", err)
		}
		out := cmd.OutOrStdout()
		if *jsonOut {
			return printJSON(out, v)
		}
		verb := "updated"
		if v.CreateIndex == v.ModifyIndex {
			verb = "created"
		}
		fmt.Fprintf(out, "Successfully %s variable %q!\n", verb, v.Path)
		return nil
	}
	return cmd
}

func newVarGetCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "get [flags] PATH", Short: "Show a variable and its items (-item KEY: just that value)", Args: exactArgs(1)}
	item := cmd.Flags().String("item", "", "print only this item's value")
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		v, _, err := c.Variable(cmd.Context(), args[0], nil)
		if err != nil {
			return answer{}, cmdErr("var get: %w", err)
		}
		if *item != "" {
			val, ok := v.Items[*item]
			if !ok {
				return answer{}, cmdErr("var get: variable %q has no item %q", args[0], *item)
			}
			return answer{val, func(w io.Writer) error {
				fmt.Fprintln(w, val)
				return nil
			}}, nil
		}
		return answer{v, func(w io.Writer) error {
			kv(w, "Namespace", v.Namespace, "Path", v.Path, "Create Time", time.Unix(0, v.CreateTime).Format(time.RFC3339),
				"Check Index", strconv.FormatUint(v.ModifyIndex, 10))
			if v.Lock != nil {
				kv(w, "Lock TTL", v.Lock.TTL, "Lock Delay", v.Lock.LockDelay)
			}
			fmt.Fprintln(w, "\nItems")
			printKV(w, v.Items)
			return nil
		}}, nil
	})
}

func newVarListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list [flags] [PREFIX]", Short: "List the variables (their paths, not their items) under a prefix", Args: rangeArgs(0, 1)}
	return readCmd(cmd, func(cmd *cobra.Command, c *api.Client, args []string) (answer, error) {
		q := &api.QueryOptions{}
		if len(args) == 1 {
			q.Prefix = args[0]
		}
		vs, _, err := c.Variables(cmd.Context(), q)
		if err != nil {
			return answer{}, cmdErr("var list: %w", err)
		}
		if vs == nil {
			vs = []*api.VariableMetadata{}
		}
		return listAnswer(vs, "No variables found", "Namespace\tPath\tLast Updated", func(m *api.VariableMetadata) string {
			return m.Namespace + "\t" + m.Path + "\t" + time.Unix(0, m.ModifyTime).Format(time.RFC3339)
		}), nil
	})
}

func newVarPurgeCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "purge [flags] PATH", Short: "Delete a variable for good", Args: exactArgs(1)}
	check := cmd.Flags().Int64("check-index", -1, "purge only if the variable's modify index is this")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		err := apiClient(cmd).DeleteVariable(cmd.Context(), args[0], *check, nil)
		var ce *api.CASConflictError
		if errors.As(err, &ce) && ce.Current != nil {
			return cmdErr("var purge: variable %q is at modify index %d, not %d (or locked by another holder)", args[0], ce.Current.ModifyIndex, *check)
		}
		if err != nil {
			return cmdErr("var purge: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Successfully purged variable %q!\n", args[0])
		return nil
	}
	return cmd
}

func newVarLockCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use: "lock [flags] PATH COMMAND [ARGS...]",
		Short: "Hold a lock over a variable while a command runs: wait for it, renew it, release it when the command exits " +
			"(exit code: the command's)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageErr("%s takes a path and a command", cmd.CommandPath())
			}
			return nil
		},
	}
	cmd.Flags().SetInterspersed(false) // flags after the path are the command's
	ttl := cmd.Flags().Duration("ttl", api.DefaultVariableLockTTL, "the lock's TTL: renewed at half of it while the command runs")
	delay := cmd.Flags().Duration("delay", api.DefaultVariableLockDelay, "how long the lock stays blocked after it expires unreleased")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := apiClient(cmd)
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		v := &api.Variable{Path: args[0], Lock: &api.VariableLock{TTL: ttl.String(), LockDelay: delay.String()}}
		held, err := acquireVarLock(ctx, c, v, *ttl)
		if err != nil {
			return cmdErr("var lock: %w", err)
		}
		lock := &api.Variable{Path: args[0], Lock: &api.VariableLock{ID: held.Lock.ID}}
		child := exec.Command(args[1], args[2:]...)
		child.Stdin, child.Stdout, child.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
		child.Env = append(os.Environ(), "DROVER_VAR_LOCK_ID="+held.Lock.ID)
		if err := child.Start(); err != nil {
			_, _ = c.LockVariable(context.WithoutCancel(ctx), api.VariableLockRelease, lock, nil)
			return cmdErr("var lock: start %q: %w", args[1], err)
		}
		exited := make(chan error, 1)
		go func() { exited <- child.Wait() }()
		renew := time.NewTicker(*ttl / 2)
		defer renew.Stop()
		var runErr error
	loop:
		for {
			select {
			case runErr = <-exited:
				break loop
			case <-ctx.Done():
				_ = child.Process.Signal(syscall.SIGTERM)
			case <-renew.C:
				if _, err := c.LockVariable(ctx, api.VariableLockRenew, lock, nil); err != nil {
					// The lock is lost: the command may no longer act as its holder.
					fmt.Fprintf(cmd.ErrOrStderr(), "var lock: renew failed (%v): stopping the command\n", err)
					_ = child.Process.Signal(syscall.SIGTERM)
					runErr = <-exited
					return cmdErr("var lock: lost the lock on %q: %w", args[0], err)
				}
			}
		}
		if _, err := c.LockVariable(context.WithoutCancel(ctx), api.VariableLockRelease, lock, nil); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "var lock: release: %v\n", err)
		}
		var ee *exec.ExitError
		if errors.As(runErr, &ee) {
			return failed(ee.ExitCode())
		}
		if runErr != nil {
			return cmdErr("var lock: %w", runErr)
		}
		return nil
	}
	return cmd
}

// acquireVarLock takes the lock, waiting while another holds it.
func acquireVarLock(ctx context.Context, c *api.Client, v *api.Variable, ttl time.Duration) (*api.Variable, error) {
	wait := min(ttl/4, time.Second)
	for {
		held, err := c.LockVariable(ctx, api.VariableLockAcquire, v, nil)
		if !errors.Is(err, api.ErrCASConflict) {
			if err == nil && (held.Lock == nil || held.Lock.ID == "") {
				return nil, fmt.Errorf("the server answered no lock ID")
			}
			return held, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}
