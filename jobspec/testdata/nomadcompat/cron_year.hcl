# Six cron fields: the sixth is a year (Nomad's cron grammar).
job "year-end" {
  type = "batch"
  periodic {
    crons            = ["0 23 31 12 * 2026", "30 6 * * MON-FRI *"]
    prohibit_overlap = true
    time_zone        = "America/New_York"
  }
  group "close" {
    task "ledger" {
      driver = "exec"
      config {
        command = "/bin/close-books"
      }
    }
  }
}
