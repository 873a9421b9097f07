job "mixed-drivers" {
  group "jvm" {
    task "app" {
      driver = "java"
      config {
        jar_path    = "local/app.jar"
        jvm_options = ["-Xmx512m"]
      }
      artifact {
        source = "https://artifacts.example.com/app.jar"
      }
    }
  }
  group "pods" {
    task "cache" {
      driver = "podman"
      config {
        image = "docker.io/library/redis:7"
      }
    }
  }
}
