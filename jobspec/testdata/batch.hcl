job "nightly" {
  type = "batch"

  periodic {
    crons            = ["0 3 * * *", "30 4 * * 1"]
    prohibit_overlap = true
    time_zone        = "Europe/Paris"
  }

  group "work" {
    count = 0
    task "report" {
      max_run_duration = "2h"
      driver = "exec"
      config {
        command = "/usr/bin/env"
      }
      dispatch_payload {
        file = "input.json"
      }
    }
  }
}
