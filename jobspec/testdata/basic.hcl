# The smallest useful job: every omitted field gets its default.
job "hello" {
  group "hello" {
    task "hello" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello; exec sleep 3600"]
      }
    }
  }
}
