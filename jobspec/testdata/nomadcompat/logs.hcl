job "chatty" {
  group "g" {
    task "a" {
      driver = "raw_exec"
      config {
        command = "/bin/chatty"
      }
      logs {
        max_files     = 3
        max_file_size = 20
      }
    }
    task "b" {
      driver = "raw_exec"
      config {
        command = "/bin/quiet"
      }
      logs {
        disabled = true
      }
    }
  }
}
