locals {
  ports   = { http = 8080, admin = 8081 }
  version = "1.2.${2 + 1}"
}

job "functional" {
  meta = {
    version = local.version
    started = formatdate("YYYY", "2026-01-02T03:04:05Z")
    labels  = join(",", sort(["b", "a"]))
  }
  group "g" {
    count = max(1, length(keys(local.ports)))
    network {
      dynamic "port" {
        for_each = local.ports
        labels   = [port.key]
        content {
          static = port.value
        }
      }
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/app"
        args    = [for k, v in local.ports : "--${k}=${v}"]
      }
      env {
        UPPER = upper("x-${NOMAD_JOB_NAME}")
      }
    }
  }
}
