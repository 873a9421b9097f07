job "stateful" {
  migrate {
    max_parallel     = 1
    health_check     = "task_states"
    min_healthy_time = "20s"
    healthy_deadline = "6m"
  }
  group "a" {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/a"
      }
    }
  }
  group "b" {
    migrate {
      max_parallel = 3
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/b"
      }
    }
  }
}
