job "fetcher" {
  group "g" {
    task "t" {
      driver = "exec"
      config {
        command = "local/bin/tool"
      }
      artifact {
        source      = "https://releases.example.com/tool_1.2.0_linux_amd64.tar.gz"
        destination = "local/bin"
        options {
          checksum = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        }
      }
      artifact {
        source      = "https://config.example.com/settings.json"
        mode        = "file"
        destination = "local/settings.json"
        headers = {
          Authorization = "Bearer placeholder"
        }
        chown = true
      }
      artifact {
        source  = "git::https://git.example.com/scripts.git"
        options = { ref = "v2" }
      }
    }
  }
}
