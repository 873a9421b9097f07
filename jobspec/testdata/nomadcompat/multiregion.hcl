job "global-api" {
  multiregion {
    strategy {
      max_parallel = 1
      on_failure   = "fail_all"
    }
    region "west" {
      count       = 2
      datacenters = ["west-1"]
    }
    region "east" {
      count       = 1
      datacenters = ["east-1"]
    }
  }
  group "api" {
    count = 0
    task "api" {
      driver = "exec"
      config {
        command = "/bin/api"
      }
    }
  }
}
