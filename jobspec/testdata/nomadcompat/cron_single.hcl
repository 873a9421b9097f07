# The older single cron attribute, Quartz-style last day of month.
job "invoices" {
  type = "batch"
  periodic {
    cron = "0 4 L * *"
  }
  group "g" {
    task "send" {
      driver = "exec"
      config {
        command = "/bin/send-invoices"
      }
    }
  }
}
