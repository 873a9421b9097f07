job "notebooks" {
  group "nb" {
    task "lab" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
      resources {
        cpu    = 500
        memory = 1024
        device "nvidia/gpu" {
          count = 1
          share {
            fraction = 0.25
            mode     = "mps"
            limit    = 0.5
          }
        }
      }
    }
    task "infer" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
      resources {
        device "nvidia/gpu/H100" {
          count = 2
          share {
            memory = "10GiB"
          }
        }
      }
    }
  }
}
