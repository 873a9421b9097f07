# id without name: the job is named after its label, as in Nomad.
job "nightly-report" {
  id   = "report-2026"
  type = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/report"
      }
    }
  }
}
