job "patch-check" {
  type = "sysbatch"
  group "check" {
    task "scan" {
      driver = "raw_exec"
      config {
        command = "/usr/bin/apt"
        args    = ["list", "--upgradable"]
      }
    }
  }
}
