# batch.hcl: run-to-completion work, with variables and locals.
# Needs: only make dev (run as root: the exec driver isolates with cgroups).
#
#   drover job run -var shards=5 examples/batch.hcl
#
# Variables are set with -var name=value, -var-file FILE or the environment
# (DROVER_VAR_shards=5); locals are computed once from them.
variable "shards" {
  type        = number
  default     = 3
  description = "how many copies of the work group run in parallel"

  validation {
    condition     = var.shards >= 1 && var.shards <= 100
    error_message = "shards must be between 1 and 100"
  }
}

locals {
  # Functions from the standard library: string, collection, encoding...
  label = format("wordcount-%02d", var.shards)
}

job "wordcount" {
  type     = "batch"
  priority = 40

  meta {
    label = local.label
  }

  group "count" {
    count = var.shards

    # Batch tasks are retried in place, then rescheduled elsewhere.
    restart {
      attempts = 2
      delay    = "5s"
      mode     = "fail"
    }

    reschedule {
      attempts = 1
      interval = "1h"
    }

    task "count" {
      driver = "exec"

      config {
        command = "/bin/sh"
        # ${NOMAD_*} names are resolved on the client when the task starts;
        # the parser keeps them as written.
        args = ["-c", "wc -w local/input.txt && echo shard ${NOMAD_ALLOC_INDEX} done"]
      }

      # A template is rendered into the task directory before start.
      template {
        data        = "the quick brown fox jumps over the lazy dog\n"
        destination = "local/input.txt"
      }

      resources {
        cpu    = 200
        memory = 64
      }

      logs {
        max_files     = 2
        max_file_size = 5
      }
    }
  }
}
