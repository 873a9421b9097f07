job "checked" {
  group "g" {
    network {
      port "http" {}
      port "grpc" {}
      port "db" {
        static = 5433
      }
    }
    service {
      name                = "checked-http"
      port                = "http"
      tags                = ["web", "v2"]
      canary_tags         = ["canary"]
      enable_tag_override = true
      on_update           = "ignore_warnings"
      meta {
        protocol = "http"
      }
      check {
        name     = "alive"
        type     = "tcp"
        interval = "5s"
        timeout  = "1s"
      }
      check {
        type   = "http"
        path   = "/ready"
        method = "POST"
        body   = "{}"
        header {
          X-Probe = ["1"]
        }
        interval        = "15s"
        timeout         = "3s"
        initial_status  = "warning"
        check_restart {
          limit = 3
          grace = "30s"
        }
      }
    }
    service {
      name = "checked-grpc"
      port = "grpc"
      check {
        type         = "grpc"
        grpc_service = "health.v1"
        grpc_use_tls = false
        interval     = "10s"
        timeout      = "2s"
      }
    }
    service {
      name = "checked-db"
      port = "db"
      task = "db"
      check {
        type     = "script"
        command  = "/bin/pg_isready"
        args     = ["-q"]
        interval = "30s"
        timeout  = "5s"
      }
    }
    task "app" {
      driver = "exec"
      config {
        command = "/bin/app"
      }
    }
    task "db" {
      driver = "exec"
      config {
        command = "/bin/db"
      }
    }
  }
}
