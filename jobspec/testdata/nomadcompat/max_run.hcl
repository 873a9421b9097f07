job "nightly-etl" {
  type = "batch"
  group "etl" {
    task "extract" {
      driver           = "raw_exec"
      max_run_duration = "2h"
      config {
        command = "/opt/etl/extract"
      }
    }
  }
}
