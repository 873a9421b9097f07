job "n" {
  vault_token = "x"
  ui {
    description = "d"
  }
  group "g" {
    prevent_reschedule_on_lost = true
    disconnect {
      lost_after = "1h"
      replace = true
    }
    volume "models" {
      type = "host"
      source = "models"
    }
    scaling {
      min = 1
      max = 3
    }
    network {
      port "http" { ignore_collision = true }
    }
    task "t" {
      driver = "exec"
      config { command = "/bin/true" }
      identity {
        env = true
      }
      volume_mount {
        volume = "models"
        destination = "/models"
      }
      service {
        name = "x"
        port = "http"
        check_restart { limit = 3 }
        check {
          type = "http"
          path = "/"
          interval = "10s"
          timeout = "2s"
          on_update = "ignore"
        }
      }
      template {
        data = "x"
        destination = "local/x"
        wait {
          min = "1s"
        }
      }
    }
  }
}
