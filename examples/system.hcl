# system.hcl: one copy on every eligible client node.
# Needs: only make dev (the dev agent enables raw_exec; other clients need
# plugin "raw_exec" { config { enabled = true } }).
#
# System jobs ignore count: the scheduler places the group on each node
# that passes the constraints, and again on nodes that join later.
job "node-probe" {
  type = "system"

  # Only Linux nodes; ${attr.*} and ${node.*} are node fingerprints,
  # compared on the server when placing.
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  group "probe" {
    # Roll out to two nodes at a time.
    update {
      max_parallel     = 2
      min_healthy_time = "5s"
      healthy_deadline = "1m"
    }

    task "probe" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do uptime; sleep 60; done"]
      }

      # Runtime values in the task's environment.
      env {
        NODE_NAME = "${node.unique.name}"
      }

      resources {
        cpu    = 50
        memory = 32
      }

      kill_timeout = "10s"
    }
  }
}
