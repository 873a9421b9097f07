# hello-exec.hcl: the smallest service job.
# Needs: only make dev (run as root: the exec driver isolates with cgroups).
#
#   drover agent -dev &
#   drover job run examples/hello-exec.hcl
#   drover alloc logs <alloc-id>
#
# A job holds groups; a group holds tasks that are placed together on one
# node; each task runs through a driver (here exec: an isolated process).
job "hello" {
  # service is the default type: tasks are kept running and restarted.
  type = "service"

  # "*" (the default) matches every datacenter.
  datacenters = ["*"]

  group "hello" {
    # One copy of the group (the default).
    count = 1

    task "hello" {
      driver = "exec"

      # config is handed to the driver as is.
      config {
        command = "/bin/sh"
        args    = ["-c", "echo \"hello from drover\"; exec sleep 3600"]
      }

      # Omitted resources default to 100 MHz of CPU and 300 MB of memory.
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
