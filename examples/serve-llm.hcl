# serve-llm.hcl: model serving next to training: a host volume with the weights, a bridge
# network, a native service behind an http check, rollouts gated on it, a workload identity.
# Needs: make dev plus containerd running, `make images` (once), the CNI plugins (Debian
# containernetworking-plugins, in /opt/cni/bin) and a host volume "weights":
#
#   drover agent -dev -host-volume weights=/srv/weights:ro
#   drover job run examples/serve-llm.hcl                       # from the repository root
#
# The image is the busybox OCI archive `make images` builds, standing in for a model server:
# its httpd answers /health on 8080 and lists the weights at /. A real server (-var image=...,
# with its own command and args) must listen on 8080 and answer GET /health.
# Tested by TestE2EExampleServeLLM.
variable "image" {
  type    = string
  default = ""
}

locals {
  image = var.image != "" ? var.image : "oci-archive://${abspath("build/images/busybox-oci.tar")}"
}

job "llm" {
  group "serve" {
    count = 2
    volume "weights" {   # client: host_volume "weights" { path = "/srv/weights" read_only = true }
      type      = "host" #   or: drover agent -host-volume weights=/srv/weights:ro
      source    = "weights"
      read_only = true
    }
    network {
      mode = "bridge"           # a CNI namespace per alloc (exec and containerd tasks)
      port "http" { to = 8080 } # a dynamic host port mapped to 8080 inside
    }
    update {
      health_check     = "checks" # the default: a new alloc counts once its checks pass
      min_healthy_time = "10s"
    }
    service {
      name     = "llm"
      port     = "http"
      provider = "nomad" # native discovery: drover service list|info, /v1/service/llm
      check {
        type     = "http" # http, tcp, script (runs in the task), grpc
        path     = "/health"
        interval = "5s"
        timeout  = "2s"
      }
      check_restart { limit = 3 } # restart the task after 3 unhealthy results in a row
    }
    task "server" {
      driver = "containerd"
      config {
        image   = local.image
        command = "sh" # the stand-in server: httpd over local/
        args    = ["-c", "ls /weights > /local/index.html; exec httpd -f -p 8080 -h /local"]
      }
      template { # what the stand-in answers on /health
        data        = "ok\n"
        destination = "local/health"
      }
      volume_mount {
        volume      = "weights"
        destination = "/weights"
      }
      identity { # a signed JWT: secrets/nomad_token and NOMAD_TOKEN
        env  = true
        file = true
      }
      resources {
        cpu    = 200
        memory = 128
      }
    }
  }
}
