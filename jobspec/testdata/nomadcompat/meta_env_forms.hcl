job "forms" {
  meta = {
    "team.name" = "platform"
  }
  group "g" {
    meta {
      shard = 3
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/env"
      }
      env = {
        "discovery.type" = "single-node"
        RATE             = 1.5
      }
      env {
        DEBUG = true
      }
      meta = {
        version = "1.4.2"
      }
    }
  }
}
