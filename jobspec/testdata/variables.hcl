variable "image" {
  type        = string
  description = "container image"
  default     = "busybox:latest"
}

variable "count" {
  type    = number
  default = 1
  validation {
    condition     = var.count >= 1 && var.count <= 10
    error_message = "count must be between 1 and 10"
  }
}

variable "dcs" {
  type    = list(string)
  default = ["dc1"]
}

variable "from_env" {
  type    = string
  default = "unset"
}

variable "from_file" {
  type    = map(string)
  default = {}
}

variable "secret" {
  type      = string
  sensitive = true
}

locals {
  tag      = "${local.name}-${var.count}"
  name     = lower("Web-${var.from_env}")
  replicas = var.count * 2
}

job "vars" {
  datacenters = var.dcs

  group "g" {
    count = local.replicas

    task "t" {
      driver = "containerd"
      config {
        image = var.image
        tag   = local.tag
        extra = var.from_file
      }
      env {
        SECRET = var.secret
      }
    }
  }
}
