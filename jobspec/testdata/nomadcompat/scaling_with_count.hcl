# An explicit count wins over scaling.min.
job "queue-workers" {
  group "workers" {
    count = 4
    scaling {
      min = 2
      max = 8
    }
    task "consume" {
      driver = "raw_exec"
      config {
        command = "/opt/q/consume"
      }
    }
  }
}
