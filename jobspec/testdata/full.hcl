job "full" {
  name        = "full-job"
  region      = "eu"
  namespace   = "prod"
  type        = "service"
  priority    = 70
  datacenters = ["dc1", "dc2"]
  node_pool   = "gpu"
  all_at_once = true

  meta {
    owner = "team-a"
    tier  = 3
  }

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }
  constraint {
    distinct_hosts = true
  }
  constraint {
    distinct_property = "${meta.rack}"
    value             = "2"
  }
  constraint {
    attribute = "${attr.os.version}"
    version   = ">= 12"
  }
  constraint {
    attribute = "${node.class}"
    regexp    = "^gpu-.*$"
  }
  constraint {
    attribute    = "${meta.tags}"
    set_contains = "ssd,nvme"
  }
  constraint {
    attribute = "${attr.drover.version}"
    operator  = "semver"
    value     = ">= 0.1.0"
  }

  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
    weight    = 80
  }

  spread {
    attribute = "${node.datacenter}"
    weight    = 60
    target "dc1" {
      percent = 70
    }
    target "dc2" {
      percent = 30
    }
  }

  update {
    max_parallel     = 2
    min_healthy_time = "15s"
    healthy_deadline = "3m"
    canary           = 1
    auto_revert      = true
  }

  reschedule {
    delay          = "10s"
    delay_function = "fibonacci"
    max_delay      = "2m"
  }

  migrate {
    max_parallel = 3
  }

  group "web" {
    count          = 3
    shutdown_delay = "6s"

    restart {
      attempts = 5
      mode     = "delay"
    }

    ephemeral_disk {
      sticky = true
      size   = 500
    }

    update {
      canary = 2
    }

    network {
      mode = "host"
      port "http" {
        to = 8080
      }
      port "admin" {
        static       = 9000
        host_network = "private"
      }
      dns {
        servers = ["1.1.1.1"]
      }
    }

    service {
      name     = "web"
      port     = "http"
      tags     = ["v1", "public"]
      provider = "drover"
      check {
        type     = "http"
        path     = "/health"
        interval = "10s"
        timeout  = "2s"
        header {
          X-Probe = ["drover"]
        }
      }
    }

    task "setup" {
      driver = "raw_exec"
      lifecycle {
        hook    = "prestart"
        sidecar = false
      }
      config {
        command = "/bin/true"
      }
    }

    task "server" {
      driver       = "containerd"
      user         = "nobody"
      kill_timeout = "20s"
      kill_signal  = "SIGINT"
      leader       = true

      config {
        image = "busybox:latest"
        args  = ["httpd", "-f", "-p", "${NOMAD_PORT_http}"]
        mounts {
          type   = "bind"
          source = "local"
          target = "/srv"
        }
        labels = {
          app = "web"
        }
      }

      env {
        LOG_LEVEL = "debug"
        NODE      = "${node.unique.name}"
      }

      resources {
        cpu        = 500
        memory     = 256
        memory_max = 512
      }

      restart {
        attempts = 1
      }

      logs {
        max_files     = 3
        max_file_size = 5
      }

      artifact {
        source      = "https://example.com/app.tar.gz"
        destination = "local/app"
        options {
          checksum = "sha256:abc"
        }
      }

      template {
        data        = "port={{ env \"NOMAD_PORT_http\" }}\n"
        destination = "local/app.conf"
        change_mode = "signal"
        change_signal = "SIGHUP"
      }

      affinity {
        attribute = "${attr.cpu.arch}"
        value     = "amd64"
        weight    = -20
      }
    }
  }
}
