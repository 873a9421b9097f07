# drover's own drivers in a bridge network with a volume: no warnings.
job "bridged" {
  group "g" {
    network {
      mode = "bridge"
      port "http" {
        to = 80
      }
    }
    volume "content" {
      type      = "host"
      source    = "www"
      read_only = true
    }
    task "httpd" {
      driver = "containerd"
      config {
        image = "docker.io/library/httpd:2.4"
      }
      volume_mount {
        volume      = "content"
        destination = "/usr/local/apache2/htdocs"
        read_only   = true
      }
    }
    task "sidecar" {
      driver = "exec"
      config {
        command = "/bin/watch-content"
      }
      volume_mount {
        volume      = "content"
        destination = "/content"
        read_only   = true
      }
    }
  }
}
