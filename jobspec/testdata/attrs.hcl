# meta and env also take the attribute (map) form; heredocs and
# interpolated numbers work in any string.
job "attrs" {
  meta = {
    team = "infra"
  }

  group "g" {
    meta = {
      "a.b" = "dotted"
    }

    task "t" {
      driver = "exec"
      env = {
        PATH_EXTRA = "/opt/bin"
        COUNT      = "${1 + 2}"
      }
      meta {
        block = "form"
      }
      meta = {
        attr = "form"
      }
      config {
        command = "/bin/cat"
        script  = <<-EOT
          echo ${upper("heredoc")}
          echo ${NOMAD_TASK_NAME}
        EOT
        ratio   = 0.5
        port    = 8080
        nothing = null
      }
    }
  }
}
