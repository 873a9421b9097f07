package main

import (
	"os"

	"github.com/drover/drover/drivers/executor/supervisor"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "executor" {
		args = args[1:]
	}
	os.Exit(supervisor.Main(nil, args))
}
