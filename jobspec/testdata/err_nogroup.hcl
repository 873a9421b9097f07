job "lonely" {
  group "g" {
    task "t" {
      driver = "exec"
      template {
        data = "x"
      }
      artifact {
      }
    }
  }
  group "empty" {
  }
}
job "second" {
}
