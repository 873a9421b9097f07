job "node-exporter" {
  type     = "system"
  priority = 90
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  group "exporter" {
    network {
      port "metrics" {
        static = 9100
      }
    }
    task "exporter" {
      driver = "raw_exec"
      config {
        command = "/usr/local/bin/node_exporter"
        args    = ["--web.listen-address=:${NOMAD_PORT_metrics}"]
      }
      resources {
        cpu    = 50
        memory = 48
      }
    }
  }
}
