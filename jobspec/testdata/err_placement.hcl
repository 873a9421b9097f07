job "bad" {
  placement {
    regions     = ["eu", "eu", ""]
    mode        = "scatter"
    spill_after = "-1m"
  }

  placement {
    mode = "spill"
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
