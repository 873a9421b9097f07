# Seven cron fields start with seconds; aliases work too.
job "ticker" {
  type = "batch"
  periodic {
    crons   = ["*/30 * * * * * *", "@weekly"]
    enabled = true
  }
  group "tick" {
    task "tick" {
      driver = "raw_exec"
      config {
        command = "/bin/echo"
        args    = ["tick"]
      }
    }
  }
}
