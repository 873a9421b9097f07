# Job-level attributes from Nomad's job block reference.
job "inventory" {
  region      = "eu"
  namespace   = "shop"
  type        = "service"
  priority    = 70
  datacenters = ["eu-west-1a", "eu-west-1b"]
  node_pool   = "general"
  all_at_once = false

  meta {
    owner = "team-inventory"
    tier  = "2"
  }

  group "api" {
    count = 2

    task "server" {
      driver = "raw_exec"

      config {
        command = "/usr/local/bin/inventory"
        args    = ["-listen", ":${NOMAD_PORT_http}"]
      }

      resources {
        cpu    = 250
        memory = 128
      }
    }
  }
}
