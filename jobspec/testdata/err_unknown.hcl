job "unknown" {
  flavour = "vanilla"

  grup "g" {
  }

  group "g" {
    task "t" {
      driver = "exec"
      resources {
        gpus = 1
      }
      config {
        command = var.missing
      }
      env {
        X = local.nope
      }
    }
  }
}
