variable "ports" {
  type    = map(number)
  default = { http = 8080, metrics = 9100 }
}

job "dyn" {
  dynamic "group" {
    for_each = ["api", "worker"]
    iterator = g
    labels   = [g.value]
    content {
      count = g.key + 1

      network {
        dynamic "port" {
          for_each = var.ports
          labels   = [port.key]
          content {
            static = port.value + g.key
          }
        }
      }

      task "main" {
        driver = "exec"
        config {
          command = "/bin/sleep"
          args    = [tostring(g.key + 10), "${NOMAD_TASK_DIR}"]
          volume "data" {
            read_only = g.key == 0
          }
        }
        dynamic "constraint" {
          for_each = ["linux"]
          content {
            attribute = "${attr.kernel.name}"
            value     = constraint.value
          }
        }
        meta {
          group = g.value
        }
      }
    }
  }
}
