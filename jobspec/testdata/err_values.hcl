job "bad" {
  type     = "daemon"
  priority = 500

  constraint {
    attribute = "${attr.kernel.name}"
    operator  = "~="
    value     = "linux"
  }

  affinity {
    attribute = "${node.class}"
    value     = "x"
    weight    = 0
  }

  group "g" {
    count = -1

    restart {
      interval = "often"
      mode     = "sometimes"
    }

    task "t" {
      config {
        command = "/bin/true"
      }
      kill_timeout = 30
      lifecycle {
        hook = "midstart"
      }
    }

    task "t" {
      driver = "exec"
      resources {
        memory = 1.5
      }
    }
  }

  group "g" {
    task "u" {
      driver = "exec"
    }
  }
}
