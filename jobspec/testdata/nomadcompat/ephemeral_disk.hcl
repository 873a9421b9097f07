job "scratchy" {
  group "g" {
    ephemeral_disk {
      sticky  = true
      migrate = true
      size    = 2048
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/app"
      }
      resources {
        cpu    = 100
        memory = 64
        disk   = 512
      }
    }
  }
}
