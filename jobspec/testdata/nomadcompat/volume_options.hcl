job "mounted" {
  group "g" {
    volume "logs" {
      type            = "host"
      source          = "logs"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
      sticky          = true
      mount_options {
        fs_type     = "ext4"
        mount_flags = ["noatime"]
      }
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/app"
      }
      volume_mount {
        volume           = "logs"
        destination      = "/var/log/app"
        propagation_mode = "private"
        selinux_label    = "Z"
      }
    }
  }
}
