job "cni-net" {
  group "g" {
    network {
      mode = "cni/overlay"
      cni {
        args = {
          TENANT = "blue"
        }
      }
      port "app" {
        to = 8000
      }
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/app"
      }
    }
  }
}
