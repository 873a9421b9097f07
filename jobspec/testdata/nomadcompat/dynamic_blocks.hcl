locals {
  shards = ["a", "b", "c"]
}

job "sharded" {
  dynamic "group" {
    for_each = local.shards
    labels   = ["shard-${group.value}"]
    content {
      task "worker" {
        driver = "exec"
        config {
          command = "/bin/worker"
          args    = ["--shard", group.value]
        }
        dynamic "template" {
          for_each = ["a.conf", "b.conf"]
          iterator = f
          content {
            data        = "shard ${group.value} file ${f.value} on ${node.unique.name}"
            destination = "local/${f.value}"
          }
        }
      }
    }
  }
}
