job "flaky" {
  type = "batch"
  reschedule {
    attempts       = 5
    interval       = "1h"
    delay          = "30s"
    delay_function = "fibonacci"
    max_delay      = "10m"
    unlimited      = false
  }
  group "g" {
    restart {
      attempts = 3
      interval = "10m"
      delay    = "20s"
      mode     = "fail"
    }
    reschedule {
      delay_function = "constant"
      unlimited      = true
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/maybe-fail"
      }
      restart {
        attempts         = 1
        render_templates = true
      }
    }
  }
}
