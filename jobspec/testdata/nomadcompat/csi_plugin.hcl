# A CSI node plugin job: docker, privileged, csi_plugin block.
job "csi-nodes" {
  type = "system"
  group "nodes" {
    task "plugin" {
      driver = "docker"
      config {
        image      = "example/csi-driver:1.0"
        privileged = true
        args       = ["--endpoint=${CSI_ENDPOINT}", "--node-id=${node.unique.id}"]
      }
      csi_plugin {
        id        = "example-csi"
        type      = "node"
        mount_dir = "/csi"
      }
      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
