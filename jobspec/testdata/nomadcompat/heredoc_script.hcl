# A shell script in a template: $${ keeps a shell variable literal
# without a warning; upper-case names are runtime names.
job "script" {
  type = "batch"
  group "g" {
    task "loop" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["local/run.sh"]
      }
      template {
        destination = "local/run.sh"
        perms       = "0755"
        data        = <<-EOT
          #!/bin/sh
          for i in 1 2 3; do
            echo "round $${i} on ${HOSTNAME} in ${NOMAD_ALLOC_DIR}"
          done
        EOT
      }
    }
  }
}
