job "typo" {
  group "g" {
    count = "x"
    task "t" {
      drivr = "exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
