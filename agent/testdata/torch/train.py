"""One rank of a data-parallel training run in a drover gang.

agent/e2e_torch_test.go runs one of these per gang member. It takes the
torch.distributed variables drover sets on gang members (MASTER_ADDR,
MASTER_PORT, WORLD_SIZE, RANK) through env:// init on the gloo backend and
trains a tiny linear model with DistributedDataParallel and SGD for STEPS
steps. Each rank draws its own batches, so the ranks' weights stay equal
only if DDP all-reduces the gradients. After every step rank 0 writes a
checkpoint (model, optimizer, step) to CKPT_DIR, which every member
mounts; a run that finds one resumes from it.

HOLD_AT=N makes a run that started fresh wait after step N until it is
stopped, as a long run would, so the test can kill a member mid-run.

On SIGTERM (the job's kill_signal) a rank says why drover stops it, from
$DROVER_ALLOC_DIR/stop_reason, and which checkpoint a resumed run would
start from: "stopping: REASON after step N", then exits.

Output, one line each: "rank R of W", "resumed from step S",
"step N checksum C" per step, "holding at step N", and at the end
"done step N checksum C allreduce A" (A: the sum of rank+1 over the ranks).
"""

import datetime
import hashlib
import os
import signal
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def checksum(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()[:16]


done_steps = 0  # the last step this rank finished (and rank 0 checkpointed)


def on_stop(signum, frame):
    try:
        with open(os.path.join(os.environ["DROVER_ALLOC_DIR"], "stop_reason")) as f:
            reason = f.read().strip()
    except OSError as e:
        reason = f"unknown ({e})"
    print(f"stopping: {reason} after step {done_steps}", flush=True)
    os._exit(0)


def main():
    global done_steps
    signal.signal(signal.SIGTERM, on_stop)
    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    steps = int(os.environ.get("STEPS", "6"))
    hold_at = int(os.environ.get("HOLD_AT", "0"))
    path = os.path.join(os.environ["CKPT_DIR"], "ckpt.pt")
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
    print(f"rank {rank} of {world}", flush=True)

    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    start = 0
    if os.path.exists(path):
        state = torch.load(path)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
    print(f"resumed from step {start}", flush=True)
    ddp = DistributedDataParallel(model)
    data = torch.Generator().manual_seed(1000 * (rank + 1) + start)

    for step in range(start + 1, steps + 1):
        x = torch.randn(16, 8, generator=data)
        y = x.sum(dim=1, keepdim=True)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        if rank == 0:
            tmp = path + ".tmp"
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, tmp)
            os.replace(tmp, path)
        dist.barrier()  # step's checkpoint is on disk before any rank says so
        done_steps = step
        print(f"step {step} checksum {checksum(model)}", flush=True)
        if hold_at and start == 0 and step == hold_at:
            print(f"holding at step {step}", flush=True)
            while True:
                time.sleep(3600)

    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    print(f"done step {steps} checksum {checksum(model)} allreduce {total.item():g}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
