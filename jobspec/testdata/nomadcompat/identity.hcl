job "ided" {
  group "g" {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/app"
      }
      identity {
        env  = true
        file = true
      }
      identity {
        name        = "storage"
        aud         = ["storage.example.com"]
        ttl         = "1h"
        file        = true
        change_mode = "restart"
      }
    }
  }
}
