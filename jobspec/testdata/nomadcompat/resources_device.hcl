job "train" {
  type = "batch"
  group "g" {
    task "train" {
      driver = "containerd"
      config {
        image = "registry.example.com/trainer:latest"
      }
      resources {
        cores      = 8
        memory     = 16384
        memory_max = 32768
        numa {
          affinity = "prefer"
        }
        device "nvidia/gpu" {
          count = 2
          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "40 GiB"
          }
          affinity {
            attribute = "${device.model}"
            value     = "H100"
            weight    = 50
          }
        }
      }
    }
  }
}
