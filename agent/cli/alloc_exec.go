package cli

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/drover/drover/agent/execclient"
	"github.com/drover/drover/api"
)

func init() { allocCmd.AddCommand(newAllocExecCmd()) }

func newAllocExecCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "exec [flags] ALLOC COMMAND [ARGS...]",
		Short: "Run a command inside a running task of an allocation",
		Long: "Run a command inside a running task of an allocation, streaming stdin, stdout and stderr.\n" +
			"With -t the local terminal is put in raw mode and the command runs on a remote pseudo-terminal\n" +
			"(the default when stdin is a terminal). Exits with the remote command's exit code.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 || (len(args) == 2 && args[1] == "--") {
				return usageErr("%s takes an allocation and a command", cmd.CommandPath())
			}
			return nil
		},
	}
	// Flags end at ALLOC: everything after it is the remote command.
	cmd.Flags().SetInterspersed(false)
	cmd.Annotations = map[string]string{flagsEndAtFirstArg: "true"}
	taskFlag := cmd.Flags().String("task", "", "task name (may be omitted when the group has one task)")
	interactive := cmd.Flags().BoolP("i", "i", true, "pass stdin to the command")
	ttyFlag := cmd.Flags().BoolP("t", "t", false, "allocate a pseudo-terminal (default: when stdin is a terminal)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		c := apiClient(cmd)
		a, err := resolveAlloc(ctx, c, args[0])
		if err != nil {
			return cmdErr("allocation %q: %w", args[0], err)
		}
		task, err := pickTask(a, *taskFlag)
		if err != nil {
			return err
		}
		command := args[1:]
		if command[0] == "--" {
			command = command[1:]
		}
		in := cmd.InOrStdin()
		inFile, _ := in.(*os.File)
		isTerm := inFile != nil && term.IsTerminal(int(inFile.Fd()))
		tty := *ttyFlag
		if !cmd.Flags().Changed("t") {
			tty = isTerm && *interactive
		}
		req := &execclient.Request{AllocID: a.ID, Task: task, Command: command, TTY: tty,
			Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
		if *interactive {
			req.Stdin = in
		}
		if tty && isTerm {
			restore, resize, stop, err := rawTerminal(ctx, inFile)
			if err != nil {
				return cmdErr("exec: %w", err)
			}
			defer restore()
			defer stop()
			req.Resize = resize
		}
		code, err := execclient.Exec(ctx, c, req)
		if err != nil {
			return cmdErr("exec in %s/%s: %w", short(a.ID), task, err)
		}
		if code != 0 {
			return failed(code)
		}
		return nil
	}
	return cmd
}

// rawTerminal puts the terminal f in raw mode and reports its size now and
// on every SIGWINCH until stop, which waits for its goroutine; restore
// brings the terminal back.
func rawTerminal(ctx context.Context, f *os.File) (restore func(), resize <-chan api.TerminalSize, stop func(), err error) {
	fd := int(f.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, nil, nil, err
	}
	restore = func() { _ = term.Restore(fd, old) }
	size := func() (api.TerminalSize, bool) {
		w, h, err := term.GetSize(fd)
		return api.TerminalSize{Height: h, Width: w}, err == nil
	}
	ch := make(chan api.TerminalSize, 1)
	if s, ok := size(); ok {
		ch <- s
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-winch:
				if s, ok := size(); ok {
					select {
					case ch <- s:
					case <-ctx.Done():
						return
					}
				}
			}
		}
	}()
	stop = func() {
		signal.Stop(winch)
		cancel()
		wg.Wait()
	}
	return restore, ch, stop, nil
}
