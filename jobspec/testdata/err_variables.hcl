variable "n" {
  type = number
  validation {
    condition     = var.n > 0
    error_message = "n must be positive"
  }
}

variable "needed" {
  type = string
}

locals {
  a = local.b
  b = local.a
}

job "v" {
  group "g" {
    count = var.n
    task "t" {
      driver = "exec"
      config {
        command = file("../../etc/passwd")
      }
    }
  }
}
