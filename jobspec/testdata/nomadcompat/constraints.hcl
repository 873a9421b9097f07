job "placed" {
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  constraint {
    operator = "distinct_hosts"
    value    = "true"
  }

  group "g" {
    count = 3
    constraint {
      distinct_property = "${meta.rack}"
      value             = "2"
    }
    constraint {
      attribute = "${attr.cpu.arch}"
      operator  = "regexp"
      value     = "^(amd64|arm64)$"
    }

    task "t" {
      driver = "exec"
      config {
        command = "/bin/app"
      }
      constraint {
        attribute = "${attr.kernel.version}"
        version   = ">= 5.10"
      }
      constraint {
        attribute = "${meta.features}"
        set_contains = "avx2,sse4"
      }
      constraint {
        attribute = "${meta.gpu_driver}"
        operator  = "is_set"
      }
    }
  }
}
