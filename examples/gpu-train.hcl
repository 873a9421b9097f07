# gpu-train.hcl: a batch job that asks for four large GPUs on one node.
# Needs: a client with 4 NVIDIA GPUs of 40 GiB or more; on one machine,
# simulated ones: `drover agent -dev -dev-gpus dgxh100` (as root); tested by
# TestE2EGPUSimulatedDGX.
#
# Devices are fingerprinted on the clients (NVML for NVIDIA). The scheduler
# only considers nodes with four healthy GPUs that pass the constraint,
# prefers the best-connected set (NVLink), and gives the task exactly those:
# CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES name them.
variable "epochs" {
  type    = number
  default = 1
}

job "train" {
  type = "batch"

  group "train" {
    task "train" {
      driver = "exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; echo epochs=${var.epochs}"]
      }

      resources {
        cpu    = 2000
        memory = 4096

        # vendor/type; "nvidia/gpu/H100" would also pin the model.
        device "nvidia/gpu" {
          count = 4

          # ${device.attr.*} are the device's fingerprinted attributes;
          # units such as GiB are understood.
          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "40 GiB"
          }

          # Soft preference among the GPUs that qualify. NVML names
          # models like "NVIDIA H100 80GB HBM3", hence the regexp.
          affinity {
            attribute = "${device.model}"
            operator  = "regexp"
            value     = "H100"
            weight    = 50
          }
        }
      }
    }
  }
}
