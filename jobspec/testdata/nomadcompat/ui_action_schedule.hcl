job "dashboarded" {
  ui {
    description = "Internal dashboard"
    link {
      label = "Runbook"
      url   = "https://wiki.example.com/runbook"
    }
  }
  group "g" {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/dash"
      }
      action "flush-cache" {
        command = "/bin/dash"
        args    = ["flush"]
      }
      schedule {
        cron {
          start    = "0 9 * * 1-5"
          end      = "0 17"
          timezone = "Europe/Berlin"
        }
      }
    }
  }
}
