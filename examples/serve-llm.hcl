# serve-llm.hcl: model serving next to training: a host volume with the weights, a bridge
# network, a native service behind an http check, rollouts gated on it, a workload identity.
# Needs a client with host_volume "weights" and the CNI plugins (Debian containernetworking-plugins).
job "llm" {
  group "serve" {
    count = 2
    volume "weights" {               # client: host_volume "weights" { path = "/srv/weights" read_only = true }
      type      = "host"             #   or: drover agent -host-volume weights=/srv/weights:ro
      source    = "weights"
      read_only = true
    }
    network {
      mode = "bridge"                # a CNI namespace per alloc (exec and containerd tasks)
      port "http" { to = 8080 }      # a dynamic host port mapped to 8080 inside
    }
    update {
      health_check     = "checks"    # the default: a new alloc counts once its checks pass
      min_healthy_time = "10s"
    }
    service {
      name     = "llm"
      port     = "http"
      provider = "nomad"             # native discovery: drover service list|info, /v1/service/llm
      check {
        type     = "http"            # http, tcp, script (runs in the task), grpc
        path     = "/health"
        interval = "5s"
        timeout  = "2s"
      }
      check_restart { limit = 3 }    # restart the task after 3 unhealthy results in a row
    }
    task "server" {
      driver = "containerd"
      config { image = "registry.example/llm:1" }
      volume_mount {
        volume      = "weights"
        destination = "/weights"
      }
      identity {                     # a signed JWT: secrets/nomad_token and NOMAD_TOKEN
        env  = true
        file = true
      }
    }
  }
}
