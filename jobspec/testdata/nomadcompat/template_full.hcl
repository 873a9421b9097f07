job "configured" {
  group "g" {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/app"
        args    = ["-config", "local/app.yaml"]
      }
      template {
        source        = "local/app.yaml.tpl"
        destination   = "local/app.yaml"
        change_mode   = "signal"
        change_signal = "SIGHUP"
        splay         = "10s"
        perms         = "0640"
        error_on_missing_key = true
        wait {
          min = "2s"
          max = "10s"
        }
      }
      template {
        data            = "DB_HOST=[[ env \"NOMAD_HOST_IP_db\" ]]\n"
        destination     = "secrets/db.env"
        env             = true
        left_delimiter  = "[["
        right_delimiter = "]]"
        change_mode     = "noop"
      }
      template {
        data        = "{{ key \"service/app/flag\" }}"
        destination = "local/flag"
        change_mode = "script"
        change_script {
          command = "/bin/reload"
          timeout = "5s"
        }
      }
    }
  }
}
