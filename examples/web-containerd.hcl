# web-containerd.hcl: a container behind a dynamic port, with a health check.
#
#   drover job run examples/web-containerd.hcl
#   drover job run -var image=oci-archive:///srv/images/busybox.tar examples/web-containerd.hcl
#
# The image is a registry reference or, where there is no registry, an OCI
# image archive on the client (see NOTES.md on building one from busybox).
variable "image" {
  type    = string
  default = "busybox:latest"
}

variable "replicas" {
  type    = number
  default = 2
}

job "web" {
  datacenters = ["*"]

  # Replace one allocation at a time, with one canary first.
  update {
    max_parallel     = 1
    canary           = 1
    min_healthy_time = "10s"
    healthy_deadline = "2m"
    auto_revert      = true
  }

  group "web" {
    count = var.replicas

    # Spread the copies over the nodes: never two on the same host.
    constraint {
      distinct_hosts = true
    }

    network {
      # A dynamic host port. Containers with ports share the host's network,
      # so httpd listens on the port itself (NOMAD_PORT_http).
      port "http" {}
    }

    service {
      name     = "web"
      port     = "http"
      provider = "drover"

      check {
        type     = "http"
        path     = "/"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "httpd" {
      driver = "containerd"

      config {
        image   = var.image
        command = "httpd"
        args    = ["-f", "-p", "${NOMAD_PORT_http}", "-h", "/local"]
      }

      template {
        data        = "<h1>hello from ${NOMAD_ALLOC_NAME}</h1>\n"
        destination = "local/index.html"
      }

      resources {
        cpu        = 200
        memory     = 64
        memory_max = 128
      }
    }
  }
}
