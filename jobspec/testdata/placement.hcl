job "train" {
  type  = "batch"
  queue = "research"

  placement {
    regions     = ["eu", "us"]
    mode        = "spill"
    spill_after = "10m"
  }

  gang {
    min = 4
  }

  group "workers" {
    count = 4

    task "train" {
      driver = "exec"
      config {
        command = "/bin/true"
      }
      resources {
        device "nvidia/gpu" {
          count = 8
        }
      }
    }
  }
}
