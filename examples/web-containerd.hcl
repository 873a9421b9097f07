# web-containerd.hcl: a container behind a dynamic port, with a health check.
#
#   make images     # once: builds build/images/busybox-oci.tar
#   drover job run examples/web-containerd.hcl      # from the repository root
#   drover job run -var image=busybox:latest -var replicas=3 examples/web-containerd.hcl
#
# The image is, by default, the busybox OCI archive `make images` builds (no
# registry needed: the dev agent's client imports it); any registry
# reference or oci-archive:///abs/path.tar works too.
variable "image" {
  type    = string
  default = ""
}

# One copy per node (distinct_hosts below): the dev agent is one node.
variable "replicas" {
  type    = number
  default = 1
}

locals {
  image = var.image != "" ? var.image : "oci-archive://${abspath("build/images/busybox-oci.tar")}"
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
        image   = local.image
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
