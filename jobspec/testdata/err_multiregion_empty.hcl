job "no-regions" {
  multiregion {
    strategy {
      max_parallel = 2
    }
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
