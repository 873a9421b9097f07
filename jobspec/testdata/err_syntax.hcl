job "syntax" {
  group "g" {
    task "t" {
      driver = "exec
    }
  }
