# Runtime interpolations are kept as text for the client to resolve.
job "runtime" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "${NOMAD_TASK_DIR}/run.sh"
        args    = ["--node=${node.unique.name}", "--dc=${node.datacenter}", "--rack", "${meta.rack}", "$${literal}"]
        envs    = { HOME = "${env["HOME"]}" }
      }
      env {
        ALLOC = "${NOMAD_ALLOC_ID}-${attr.unique.hostname}"
      }
      template {
        data        = "{{ env \"NOMAD_TASK_NAME\" }}"
        destination = "${NOMAD_SECRETS_DIR}/t.env"
        env         = true
      }
    }
  }
}
