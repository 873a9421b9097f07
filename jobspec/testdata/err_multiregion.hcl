job "bad-regions" {
  multiregion {
    strategy {
      max_parallel = -1
      on_failure   = "fail_some"
    }
    strategy {}
    region "west" {
      count       = -2
      datacenters = ["west-1", ""]
      zone        = "a"
    }
    region "west" {}
  }

  group "g" {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
