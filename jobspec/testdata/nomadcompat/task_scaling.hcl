# Task-level scaling (dynamic application sizing): accepted, ignored.
job "sized" {
  group "g" {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/app"
      }
      resources {
        cpu    = 500
        memory = 256
      }
      scaling "cpu" {
        enabled = true
        min     = 100
        max     = 1000
        policy {
          cooldown = "5m"
        }
      }
      scaling "mem" {
        min = 128
        max = 512
      }
    }
  }
}
