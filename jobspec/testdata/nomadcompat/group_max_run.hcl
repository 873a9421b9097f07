# A batch group with a deadline for the whole allocation (Nomad 1.11):
# drover accepts it and warns that it does not enforce it yet.
job "backfill" {
  type = "batch"

  group "load" {
    max_run_duration = "30m"

    task "copy" {
      driver = "raw_exec"
      config {
        command = "/usr/local/bin/backfill"
      }
    }
  }
}
