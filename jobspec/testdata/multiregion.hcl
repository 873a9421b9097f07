job "docs" {
  datacenters = ["dc1"]
  meta {
    first-key = "job-level"
  }
  update {
    max_parallel = 1
    auto_revert  = true
  }

  multiregion {
    strategy {
      max_parallel = 1
      on_failure   = "fail_all"
    }

    region "west" {
      count       = 2
      datacenters = ["west-1"]
      node_pool   = "gpu"
      meta {
        first-key = "regional-west"
      }
    }

    region "east" {
      count       = 5
      datacenters = ["east-1", "east-2"]
      meta = {
        second-key = "regional-east"
      }
    }

    region "south" {}
  }

  group "worker" {
    count = 0
    task "w" {
      driver = "exec"
      config {
        command = "/bin/worker"
      }
    }
  }

  group "controller" {
    task "c" {
      driver = "exec"
      config {
        command = "/bin/controller"
      }
    }
  }
}
