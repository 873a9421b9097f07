job "graceful" {
  group "g" {
    shutdown_delay = "5s"
    task "leader" {
      driver         = "raw_exec"
      leader         = true
      kill_signal    = "SIGTERM"
      kill_timeout   = "45s"
      shutdown_delay = "3s"
      user           = "nobody"
      config {
        command = "/bin/serve"
      }
    }
    task "helper" {
      driver = "raw_exec"
      config {
        command = "/bin/helper"
      }
    }
  }
}
