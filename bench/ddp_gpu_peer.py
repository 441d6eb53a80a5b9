#!/usr/bin/env python3
"""The PyTorch DistributedDataParallel peer of `transient train --device cuda --dataset npy`: a
TorchScript model (torchvision's, exported by bench/gpu_models.py) trained on CUDA GPUs by DDP
over NCCL, one process per GPU, launched by torchrun:

  python3 bench/gpu_models.py --out /tmp/gpu --size 224 --samples 8192
  torchrun --standalone --nnodes 1 --nproc_per_node 1 bench/ddp_gpu_peer.py \\
      --model-file /tmp/gpu/resnet50.pt --data /tmp/gpu/npy-224 --steps 60 --global-batch 128 \\
      --precision bf16 --out peer.json

Each step does the work transient's does with the same files (src/transient/train/worker.cc):
the rank's share of the global batch is gathered from the memory-mapped images.npy (uint8) into
pinned host memory, copied to the GPU without blocking, scaled to [0, 1] and centred on 0.5
(deviation 0.5) there; forward and the summed cross-entropy divided by the global batch run under
bf16 autocast with --precision bf16 (fp16 autocast and torch.amp.GradScaler with --precision
fp16, as transient's fp16 scales its loss); backward all-reduces through DDP's buckets (NCCL); SGD with
momentum 0.9 (torch.optim.SGD, its default foreach implementation on CUDA). The samples are a
seeded permutation's, cut as transient cuts them (the order differs: torch.randperm).

Throughput is measured over the steps after the first --warmup (default 10), between two
torch.cuda.synchronize() calls. Rank 0 prints one line and writes a JSON object (--out):
samples_per_s, steps, warmup_steps, step_s (mean seconds per timed step), precision, world_size.
"""

import argparse
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-file", required=True)
    parser.add_argument("--data", required=True, help="folder with images.npy and labels.npy")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--global-batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--out", default="")
    parser.add_argument("--probe-first", action="store_true",
                        help="before training, run the model once as transient's worker checks "
                             "a model file (models.cc): on the CPU, in eval mode, without "
                             "gradients, on 2 zero images; TorchScript's executor then meets the "
                             "training's calls second")
    parser.add_argument("--trace", default="",
                        help="after the timed steps, trace two more under torch.profiler (CPU "
                             "operators, CUDA kernels) and write their Chrome trace here")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)

    images = np.load(os.path.join(args.data, "images.npy"), mmap_mode="r")
    labels = torch.from_numpy(np.load(os.path.join(args.data, "labels.npy")).astype(np.int64))
    held_out = len(images) // 10  # transient's npy: the last tenth is the test set
    train = len(images) - held_out
    torch.manual_seed(1)
    model = torch.jit.load(args.model_file)
    if args.probe_first:
        model.eval()
        with torch.no_grad():
            model(torch.zeros(2, *images.shape[1:]))
        model.train()
    model = model.to(device)
    model.train()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.precision)
    scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "fp16")
    order = torch.randperm(train, generator=torch.Generator().manual_seed(1))
    share = args.global_batch // world + (1 if rank < args.global_batch % world else 0)
    before = sum(args.global_batch // world + (1 if r < args.global_batch % world else 0)
                 for r in range(rank))

    def step(s):
        cursor = (s * args.global_batch) % (train - args.global_batch)
        index = order[cursor + before:cursor + before + share].numpy()
        index.sort()  # a memory-mapped gather reads the file in order (transient's is a torch gather)
        host = torch.from_numpy(images[index]).pin_memory()
        x = host.to(device, non_blocking=True).float().div_(255).sub_(0.5).div_(0.5)
        y = labels[index].pin_memory().to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=half or torch.bfloat16, enabled=half is not None):
            loss = F.cross_entropy(ddp(x), y, reduction="sum") / args.global_batch
        loss_value = loss.item()  # transient reads its loss every step too
        optimizer.zero_grad(set_to_none=False)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss_value

    for s in range(args.warmup):
        step(s)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for s in range(args.warmup, args.steps):
        last = step(s)
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    if args.trace and rank == 0:
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities, record_shapes=True) as profiler:
            for s in range(args.steps, args.steps + 2):
                with torch.profiler.record_function("peer::step"):
                    step(s)
            torch.cuda.synchronize()
        profiler.export_chrome_trace(args.trace)
    timed = args.steps - args.warmup
    result = {
        "samples_per_s": timed * args.global_batch / wall,
        "steps": args.steps,
        "warmup_steps": args.warmup,
        "step_s": wall / timed,
        "precision": args.precision,
        "world_size": world,
        "final_loss": last,
        "gpu": torch.cuda.get_device_name(device),
    }
    if rank == 0:
        print(f"DDP (NCCL) {result['samples_per_s']:.1f} samples/s, {1000 * result['step_s']:.2f} "
              f"ms/step on {world} x {result['gpu']}")
        if args.out:
            with open(args.out, "w") as f:
                json.dump(result, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
