job "edge" {
  group "g" {
    disconnect {
      lost_after           = "6h"
      replace              = false
      reconcile            = "keep_original"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/edge-agent"
      }
    }
  }
}
