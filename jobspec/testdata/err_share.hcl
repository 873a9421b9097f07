job "bad" {
  group "g" {
    task "t" {
      driver = "exec"
      resources {
        device "nvidia/gpu" {
          share {
            fraction = 1.5
            memory   = "10GiB"
            mode     = "exclusive"
          }
        }
        device "nvidia/gpu" {
          share {
            memory = "lots"
          }
        }
        device "nvidia/gpu" {
          share {
            limit = 0.1
            fraction = 0.25
          }
        }
      }
    }
  }
}
