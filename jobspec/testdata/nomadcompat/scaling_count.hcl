# count left out: the group starts at scaling.min.
job "frontend" {
  group "web" {
    scaling {
      enabled = true
      min     = 3
      max     = 10

      policy {
        cooldown            = "1m"
        evaluation_interval = "30s"

        check "cpu" {
          source = "nomad-apm"
          query  = "avg_cpu"
          strategy "target-value" {
            target = 70
          }
        }
      }
    }

    task "nginx" {
      driver = "containerd"
      config {
        image = "docker.io/library/nginx:1.27"
      }
      resources {
        cpu    = 200
        memory = 96
      }
    }
  }
}
