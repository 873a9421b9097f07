# A bridge network and a docker task: Nomad accepts it and leaves the
# driver to the clients.
job "echo" {
  datacenters = ["*"]

  group "echo" {
    count = 2

    network {
      mode = "bridge"
      port "http" {
        to = 5678
      }
    }

    service {
      name     = "echo"
      port     = "http"
      provider = "nomad"

      check {
        type     = "http"
        path     = "/health"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "server" {
      driver = "docker"

      config {
        image = "hashicorp/http-echo:1.0"
        args  = ["-text", "hello from ${NOMAD_ALLOC_ID}"]
        ports = ["http"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
