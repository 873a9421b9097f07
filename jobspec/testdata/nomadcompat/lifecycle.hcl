job "app-with-hooks" {
  group "app" {
    task "migrate-db" {
      driver = "exec"
      lifecycle {
        hook    = "prestart"
        sidecar = false
      }
      config {
        command = "/bin/migrate"
      }
    }
    task "log-shipper" {
      driver = "raw_exec"
      lifecycle {
        hook    = "prestart"
        sidecar = true
      }
      config {
        command = "/bin/ship-logs"
      }
    }
    task "announce" {
      driver = "exec"
      lifecycle {
        hook = "poststart"
      }
      config {
        command = "/bin/announce"
      }
    }
    task "cleanup" {
      driver = "exec"
      lifecycle {
        hook = "poststop"
      }
      config {
        command = "/bin/cleanup"
      }
    }
    task "main" {
      driver = "exec"
      config {
        command = "/bin/app"
      }
    }
  }
}
