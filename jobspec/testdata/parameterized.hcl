job "encode" {
  type = "sysbatch"

  parameterized {
    payload       = "required"
    meta_required = ["input"]
    meta_optional = ["profile"]
  }

  group "encode" {
    task "ffmpeg" {
      driver = "raw_exec"
      config {
        command = "ffmpeg"
        args    = ["-i", "${NOMAD_META_input}"]
      }
      resources {
        cores  = 2
        memory = 1024
        device "nvidia/gpu" {
          count = 4
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
