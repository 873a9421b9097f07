# A device asked as a list of alternatives: two big cards, else one small.
# drover places with the first alternative and warns about the rest.
job "infer" {
  type = "batch"

  group "g" {
    task "serve" {
      driver = "containerd"
      config {
        image = "docker.io/library/busybox:1"
      }
      resources {
        memory = 2048
        device "nvidia/gpu" {
          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "16 GiB"
          }
          first_available {
            count = 2
            constraint {
              attribute = "${device.model}"
              value     = "H100"
            }
          }
          first_available {
            count = 1
          }
        }
      }
    }
  }
}
