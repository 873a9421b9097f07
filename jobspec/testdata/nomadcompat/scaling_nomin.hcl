# scaling without min and without count: both default to 1.
job "elastic" {
  group "g" {
    scaling {
      max = 5
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/serve"
      }
    }
  }
}
