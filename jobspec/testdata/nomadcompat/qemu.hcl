job "vm" {
  group "vm" {
    network {
      port "ssh" {}
    }
    task "vm" {
      driver = "qemu"
      config {
        image_path  = "local/disk.img"
        accelerator = "kvm"
        args        = ["-nographic"]
        port_map {
          ssh = 22
        }
      }
      artifact {
        source      = "https://images.example.com/disk.img"
        mode        = "file"
        destination = "local/disk.img"
      }
      resources {
        cpu    = 1000
        memory = 1024
      }
    }
  }
}
