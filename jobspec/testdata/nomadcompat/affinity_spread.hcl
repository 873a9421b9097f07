job "spread-out" {
  affinity {
    attribute = "${node.datacenter}"
    value     = "dc2"
    weight    = 60
  }

  spread {
    attribute = "${node.datacenter}"
    weight    = 100
    target "dc1" {
      percent = 70
    }
    target "dc2" {
      percent = 30
    }
  }

  group "g" {
    count = 10
    affinity {
      attribute = "${meta.ssd}"
      value     = "true"
      weight    = -20
    }
    spread {
      attribute = "${meta.rack}"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      affinity {
        attribute = "${attr.cpu.numcores}"
        operator  = ">="
        value     = "8"
        weight    = 50
      }
    }
  }
}
