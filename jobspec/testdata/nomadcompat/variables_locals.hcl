variables {
  replicas = 2
}

variable "image" {
  type        = string
  default     = "busybox:1.37"
  description = "The image to run."
  validation {
    condition     = strlen(var.image) > 0
    error_message = "The image must not be empty."
  }
}

variable "regions" {
  type    = list(string)
  default = ["dc1", "dc2"]
}

locals {
  name     = "web-${join("-", var.regions)}"
  data_dir = "${NOMAD_ALLOC_DIR}/data"
}

job "vars" {
  datacenters = var.regions
  group "g" {
    count = var.replicas
    task "t" {
      driver = "containerd"
      config {
        image = var.image
        args  = [local.data_dir]
      }
      env {
        NAME = upper(local.name)
      }
    }
  }
}
