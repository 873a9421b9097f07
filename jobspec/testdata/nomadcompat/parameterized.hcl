job "transcode" {
  type = "batch"
  parameterized {
    payload       = "required"
    meta_required = ["profile"]
    meta_optional = ["priority_hint"]
  }
  group "g" {
    task "ffmpeg" {
      driver = "exec"
      config {
        command = "/usr/bin/ffmpeg"
        args    = ["-i", "local/input.json", "-preset", "${NOMAD_META_profile}"]
      }
      dispatch_payload {
        file = "input.json"
      }
    }
  }
}
