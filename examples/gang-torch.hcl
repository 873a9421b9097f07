# gang-torch.hcl: a two-node torch.distributed training job as one gang.
# Needs: two clients with 8 NVIDIA GPUs each, and torchrun and train.py on
# them. `drover agent -dev -dev-gpus dgxh100 -dev-clients 2` places it (its
# tasks then fail without torchrun); tested by TestE2EDevClientsGangTorch.
#
# The group's two allocs are placed together or not at all (gang {}): no
# member holds GPUs while the other waits for room. Each gets all 8 GPUs of
# a node, preferably two nodes of one rack (node meta topology.rack, from
# the agent's client { topology { rack = "r1" } }).
#
# Every member's task gets its place in the gang: DROVER_GANG_RANK,
# DROVER_GANG_SIZE, DROVER_GANG_LEADER_ADDR (rank 0's address and its
# reserved "drover_gang" port), the same as MASTER_ADDR and MASTER_PORT,
# WORLD_SIZE and RANK for one process per member (a job that sets any of
# these in env keeps its own), and the members' addresses in
# $DROVER_GANG_HOSTS (/etc/hosts format) and $DROVER_GANG_HOSTFILE (an MPI
# hostfile). torchrun starts 8 processes per member, so it takes the gang
# as nodes: --nnodes and --node_rank.
job "torch" {
  type = "batch"

  group "workers" {
    count = 2

    gang {
      timeout = "30m"

      topology {
        level = "rack"
        mode  = "preferred"
      }
    }

    task "train" {
      driver = "exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "cat $DROVER_GANG_HOSTS; exec torchrun --nnodes=${DROVER_GANG_SIZE} --node_rank=${DROVER_GANG_RANK} --nproc_per_node=8 --rdzv_backend=static --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT train.py"]
      }

      resources {
        cpu    = 16000
        memory = 65536

        device "nvidia/gpu" {
          count = 8
        }
      }
    }
  }
}
