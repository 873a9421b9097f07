// Command drover is a lightweight cluster orchestrator: one binary that
// runs as a server, a client, or both (`drover agent -dev`), and the CLI.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/drover/drover/agent/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
