job "pair" {
  type = "batch"

  task "first" {
    driver = "exec"
    config {
      command = "/bin/true"
    }
  }

  task "second" {
    driver = "raw_exec"
    config {
      command = "/bin/date"
    }
  }
}
