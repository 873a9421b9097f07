# A task written directly in the job is wrapped in a group of its name,
# placed before the job's own groups.
job "report" {
  type = "batch"

  task "collect" {
    driver = "raw_exec"
    config {
      command = "/usr/bin/collect-metrics"
    }
    resources {
      cpu    = 100
      memory = 64
    }
  }

  group "publish" {
    count = 1
    task "upload" {
      driver = "exec"
      config {
        command = "/usr/bin/upload"
      }
    }
  }
}
