# Host volumes mounted into a docker task, one under the task dir.
job "postgres" {
  group "db" {
    volume "pgdata" {
      type      = "host"
      source    = "pgdata"
      read_only = false
    }

    task "postgres" {
      driver = "docker"

      volume_mount {
        volume      = "pgdata"
        destination = "/var/lib/postgresql/data"
      }

      volume_mount {
        volume      = "pgdata"
        destination = "${NOMAD_TASK_DIR}/snapshot"
        read_only   = true
      }

      config {
        image = "postgres:17"
      }

      resources {
        cpu    = 500
        memory = 1024
      }
    }
  }
}
