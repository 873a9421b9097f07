# The id attribute names the job instead of the block label.
job "label-name" {
  id   = "billing-v2"
  name = "Billing (v2)"

  group "worker" {
    task "run" {
      driver = "exec"
      config {
        command = "/bin/billing"
      }
    }
  }
}
