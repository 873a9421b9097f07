package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"
)

// DefaultInitFile is where job init writes when no file is named.
const DefaultInitFile = "example.hcl"

func init() {
	jobCmd.AddCommand(newJobInitCmd())
}

func newJobInitCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "init [flags] [FILE]",
		Short: "Write an example job file (" + DefaultInitFile + " by default)",
		Args:  cobra.MaximumNArgs(1),
	}
	short := cmd.Flags().Bool("short", false, "write a minimal job without comments")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		path := DefaultInitFile
		if len(args) == 1 {
			path = args[0]
		}
		content := exampleJob
		if *short {
			content = exampleJobShort
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			return cmdErrf("job file %q already exists; not overwriting it", path)
		}
		if err != nil {
			return cmdErrf("create %s: %w", path, err)
		}
		if _, err := f.WriteString(content); err != nil {
			f.Close()
			return cmdErrf("write %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			return cmdErrf("write %s: %w", path, err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Example job file written to %s\n", path)
		return nil
	}
	return cmd
}

// cmdErrf is an error with exit code 1.
func cmdErrf(format string, a ...any) error {
	return &exitError{code: ExitError, err: fmt.Errorf(format, a...)}
}

const exampleJobShort = `job "example" {
  group "web" {
    network {
      port "http" {
        to = 8080
      }
    }

    task "web" {
      driver = "exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello from drover; exec sleep 3600"]
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

const exampleJob = `# An example job, written by "drover job init". Validate it with
# "drover job validate example.hcl" and run it with "drover job run example.hcl".
#
# The grammar is Nomad's HCL2 jobspec: a job holds groups, a group holds
# tasks placed together on one node, a task runs through a driver
# (exec, raw_exec, containerd or qemu).

# Variables are set with -var name=value, -var-file FILE or the environment
# (DROVER_VAR_message=...).
variable "message" {
  type    = string
  default = "hello from drover"
}

job "example" {
  # service (the default) keeps tasks running; batch runs them to
  # completion; system and sysbatch run on every eligible node.
  type = "service"

  # "*" (the default) matches every datacenter.
  datacenters = ["*"]

  # Scheduling priority, 1 to 100 (default 50).
  priority = 50

  # Constraints filter nodes; ${attr.*}, ${node.*} and ${meta.*} are the
  # nodes' fingerprints.
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  # Rolling updates: one allocation at a time, healthy for 10s each.
  update {
    max_parallel     = 1
    min_healthy_time = "10s"
    healthy_deadline = "3m"
    auto_revert      = true
  }

  group "web" {
    # How many copies of the group to run.
    count = 1

    network {
      # A dynamic host port, reachable inside the task as 8080.
      port "http" {
        to = 8080
      }
    }

    # Restart a failed task in place up to twice in 30 minutes.
    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }

    ephemeral_disk {
      size = 300
    }

    task "web" {
      driver = "exec"

      # config is handed to the driver as is. ${NOMAD_*} names are
      # resolved on the client when the task starts.
      config {
        command = "/bin/sh"
        args    = ["-c", "echo ${var.message} on port $NOMAD_PORT_http; exec sleep 3600"]
      }

      env {
        GREETING = var.message
      }

      # Defaults are 100 MHz of CPU and 300 MB of memory.
      resources {
        cpu    = 100
        memory = 64
      }

      # Keep 3 rotated log files of at most 5 MB each.
      logs {
        max_files     = 3
        max_file_size = 5
      }

      # Wait this long after the kill signal before killing hard.
      kill_timeout = "5s"
    }
  }
}
`
