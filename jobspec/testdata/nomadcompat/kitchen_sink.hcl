# Most of a real service: several groups, services, templates, update,
# restart, docker and containerd side by side.
job "shop" {
  datacenters = ["*"]
  type        = "service"

  update {
    max_parallel = 1
    canary       = 1
    auto_revert  = true
  }

  group "frontend" {
    count = 3

    network {
      port "http" {
        to = 3000
      }
    }

    service {
      name     = "shop-frontend"
      port     = "http"
      provider = "nomad"
      tags     = ["urlprefix-/"]
      check {
        type     = "http"
        path     = "/"
        interval = "10s"
        timeout  = "2s"
      }
    }

    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }

    task "next" {
      driver = "docker"
      config {
        image = "example/shop-frontend:5"
        ports = ["http"]
      }
      template {
        destination = "local/env"
        env         = true
        data        = <<EOT
{{ range nomadService "shop-api" }}API_URL=http://{{ .Address }}:{{ .Port }}{{ end }}
EOT
      }
      resources {
        cpu    = 300
        memory = 256
      }
    }
  }

  group "api" {
    count = 2

    network {
      port "api" {}
    }

    task "api" {
      driver = "containerd"
      config {
        image = "registry.example.com/shop-api:12"
        args  = ["--port", "${NOMAD_PORT_api}"]
      }
      service {
        name = "shop-api"
        port = "api"
        provider = "nomad"
      }
      resources {
        cpu    = 500
        memory = 512
      }
    }
  }
}
