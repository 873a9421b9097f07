# Interpolations of names that are no variable stay literal for the
# client, as Nomad keeps them.
job "interp" {
  group "g" {
    task "t" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo ${node.unique.id} ${attr.kernel.name} ${meta.rack}"]
      }

      env {
        DATA_DIR = "${NOMAD_TASK_DIR}/data"
        GREETING = "${greeting}"
      }

      template {
        destination = "local/app.conf"
        data        = <<EOT
listen = ${NOMAD_ADDR_http}
node   = ${node.unique.name}
mode   = ${app_mode}
EOT
      }
    }
  }
}
