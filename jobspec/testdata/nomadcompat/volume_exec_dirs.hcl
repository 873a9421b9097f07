# volume_mount destinations under the alloc, task and secrets dirs.
job "cache" {
  group "cache" {
    volume "shared" {
      type   = "host"
      source = "scratch"
    }
    volume "certs" {
      type      = "host"
      source    = "tls"
      read_only = true
    }

    task "warm" {
      driver = "exec"
      config {
        command = "/bin/warm-cache"
      }
      volume_mount {
        volume      = "shared"
        destination = "${NOMAD_ALLOC_DIR}/shared"
      }
      volume_mount {
        volume      = "certs"
        destination = "${NOMAD_SECRETS_DIR}/certs"
        read_only   = true
      }
    }
  }
}
