# Vault and Consul settings: accepted, warned about, ignored.
job "secretive" {
  vault_token = ""
  group "g" {
    consul {
      namespace = "apps"
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/app"
      }
      vault {
        policies    = ["app-read"]
        change_mode = "restart"
      }
      consul {
        cluster = "default"
      }
    }
  }
}
