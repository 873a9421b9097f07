job "netty" {
  group "g" {
    network {
      mode     = "host"
      hostname = "netty-${NOMAD_ALLOC_INDEX}"
      port "http" {
        static       = 8080
        host_network = "public"
      }
      port "metrics" {
        to = 9100
      }
      dns {
        servers  = ["10.0.0.2", "1.1.1.1"]
        searches = ["svc.local"]
        options  = ["ndots:2"]
      }
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/netty"
      }
    }
  }
}
