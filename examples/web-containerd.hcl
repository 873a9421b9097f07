# web-containerd.hcl: a container behind a dynamic port, with a health check
# and canary rollouts.
# Needs: make dev, containerd running on the machine, and `make images` (once)
# for the default image; tested by TestE2EExampleWebRollout.
#
#   make images     # once: builds build/images/busybox-oci.tar
#   drover job run examples/web-containerd.hcl      # from the repository root
#   drover job run -var message=v2 examples/web-containerd.hcl   # an update:
#   drover deployment promote <deployment-id>       # one canary, then promote
#
# The image is, by default, the busybox OCI archive `make images` builds (no
# registry needed: the dev agent's client imports it); any registry
# reference or oci-archive:///abs/path.tar works too (-var image=...).
variable "image" {
  type    = string
  default = ""
}

variable "replicas" {
  type    = number
  default = 1
}

# What the page says: change it to roll out a new version.
variable "message" {
  type    = string
  default = "hello"
}

locals {
  image = var.image != "" ? var.image : "oci-archive://${abspath("build/images/busybox-oci.tar")}"
}

job "web" {
  datacenters = ["*"]

  # Replace one allocation at a time, with one canary first: it runs
  # beside the old version (on the same node, too) until `drover
  # deployment promote`; auto_revert rolls back a canary that fails.
  update {
    max_parallel     = 1
    canary           = 1
    min_healthy_time = "10s"
    healthy_deadline = "2m"
    auto_revert      = true
  }

  group "web" {
    count = var.replicas

    # Spread the copies over the nodes where there are several. (Not
    # distinct_hosts: a canary could then never run beside the old
    # version on a one-node cluster such as the dev agent.)
    spread {
      attribute = "${node.unique.id}"
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
        data        = "<h1>${var.message} from ${NOMAD_ALLOC_NAME}</h1>\n"
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
