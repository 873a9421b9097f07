job "edge-old" {
  group "a" {
    max_client_disconnect = "1h"
    task "t" {
      driver = "exec"
      config {
        command = "/bin/a"
      }
    }
  }
  group "b" {
    stop_after_client_disconnect = "90s"
    prevent_reschedule_on_lost   = true
    task "t" {
      driver = "exec"
      config {
        command = "/bin/b"
      }
    }
  }
}
