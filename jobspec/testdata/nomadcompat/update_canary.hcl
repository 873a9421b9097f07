job "storefront" {
  update {
    max_parallel      = 2
    health_check      = "checks"
    min_healthy_time  = "15s"
    healthy_deadline  = "4m"
    progress_deadline = "12m"
    auto_revert       = true
    stagger           = "20s"
  }
  group "web" {
    count = 4
    update {
      canary       = 1
      auto_promote = true
      health_check = "task_states"
    }
    task "web" {
      driver = "containerd"
      config {
        image = "registry.example.com/storefront:3.1"
      }
    }
  }
}
