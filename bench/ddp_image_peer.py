#!/usr/bin/env python3
"""The PyTorch DistributedDataParallel peer of `transient train --model FILE.pt --data FOLDER`:
a TorchScript model trained on an image folder, as DDP over the Gloo backend on CPU, one process
per rank, launched by torchrun:

  .venv/bin/python3 examples/resnet18_image_folder.py --out /tmp/rn18
  .venv/bin/python3 bench/make_image_folder.py --out /tmp/images-32 --size 32
  .venv/bin/torchrun --standalone --nnodes 1 --nproc_per_node 2 --redirects 1:2 --tee 0:1 \\
      bench/ddp_image_peer.py --model-file /tmp/rn18/resnet18.pt --data /tmp/images-32 \\
      --image-size 32 --steps 60 --global-batch 32 --optimizer adamw --lr 0.001 --out peer.json

It is bench/ddp_peer.py with the in-memory Fashion-MNIST tensors replaced by what `transient
train` does with an image folder (src/transient/train/image_folder.h): the model is the file's
TorchScript module (torch.jit.load, in training mode); the samples are ROOT/train's (or ROOT's)
images, read by torchvision's ImageFolder (Pillow, RGB), transformed by torchvision's transforms
as bench/image_pipeline_peer.py does (augment crop or resized-crop), and decoded ahead of the
training by a DataLoader with --loader-workers processes per rank (default 2, as transient's
--loader-threads). Each step's global batch is cut from a seeded permutation of the whole set
through a global cursor, and each of the N ranks takes its part of it as in
src/transient/train/sharding.h (the data order differs from transient's: torch.randperm; the
learning rate is constant: neither changes the work of a step).

Throughput is measured as in bench/ddp_peer.py: over the steps after the first --warmup (default
10), which carry the loader processes' start, Gloo's connection set-up and DDP's first-step
bucket rebuild. Rank 0 prints one line and writes a JSON object (--out) with the fields of
bench/ddp_peer.py's (samples_per_s, samples_per_s_whole, steps, warmup_steps, timed_steps,
wall_s, init_s, final_loss, step_s, and the per-phase means data_s, the wait for the batch,
compute_s and optimizer_s) and the image settings.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torchvision

from ddp_peer import measured, shard, write_result
from image_pipeline_peer import floats, training_transform


def step_batches(n, steps, global_batch, seed):
    """The indices of each step's global batch: a seeded permutation per epoch, walked by a
    global cursor; an epoch's last step takes what is left."""
    gen = torch.Generator().manual_seed(seed)
    perm, cursor = torch.randperm(n, generator=gen), 0
    for _ in range(steps):
        if cursor == n:
            perm, cursor = torch.randperm(n, generator=gen), 0
        batch = min(global_batch, n - cursor)
        yield perm[cursor : cursor + batch]
        cursor += batch


class RankBatches:
    """The DataLoader's batch sampler: this rank's part of every step's global batch."""

    def __init__(self, n, steps, global_batch, seed, world, rank):
        self.args = (n, steps, global_batch, seed)
        self.world, self.rank = world, rank

    def __iter__(self):
        for whole in step_batches(*self.args):
            begin, count = shard(len(whole), self.world, self.rank)
            yield whole[begin : begin + count].tolist()

    def __len__(self):
        return self.args[1]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model-file", required=True,
                   help="a TorchScript module [N,3,S,S] -> [N,classes] (torch.jit.save)")
    p.add_argument("--data", required=True,
                   help="an image folder: ROOT/<class>/<image>, or ROOT/train/<class>/<image>")
    p.add_argument("--image-size", type=int, default=32, help="S (default 32)")
    p.add_argument("--augment", choices=("crop", "resized-crop"), default="crop")
    p.add_argument("--mean", type=floats, default=[0.5, 0.5, 0.5])
    p.add_argument("--std", type=floats, default=[0.25, 0.25, 0.25])
    p.add_argument("--loader-workers", type=int, default=2,
                   help="DataLoader processes per rank (default 2)")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10, help="untimed first steps (default 10)")
    p.add_argument("--global-batch", type=int, default=32)
    p.add_argument("--optimizer", choices=("sgd", "adamw"), default="adamw")
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--momentum", type=float, default=0.9, help="sgd")
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads per rank")
    p.add_argument("--out", help="JSON file written by rank 0")
    args = p.parse_args()
    if args.steps <= args.warmup:
        p.error(f"--steps ({args.steps}) must exceed --warmup ({args.warmup})")
    return args


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    t_start = time.perf_counter()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    root = os.path.join(args.data, "train")
    root = root if os.path.isdir(root) else args.data
    transform = training_transform(args.image_size, args.augment, args.mean, args.std)
    dataset = torchvision.datasets.ImageFolder(root, transform=transform)
    torch.manual_seed(args.seed + rank)  # the loader processes' augmentation differs by rank
    sampler = RankBatches(len(dataset), args.steps, args.global_batch, args.seed, world, rank)
    loader = torch.utils.data.DataLoader(dataset, batch_sampler=sampler,
                                         num_workers=args.loader_workers)

    model = torch.jit.load(args.model_file)
    model.train()
    # DDP broadcasts rank 0's weights at construction; batch-norm buffers are not broadcast every
    # step (transient does not either), as in bench/ddp_peer.py.
    ddp = nn.parallel.DistributedDataParallel(model, broadcast_buffers=False)
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum,
                              weight_decay=args.weight_decay)
    else:
        opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    global_sizes = [len(b) for b in step_batches(len(dataset), args.steps, args.global_batch,
                                                 args.seed)]

    phases = {"data_s": 0.0, "compute_s": 0.0, "optimizer_s": 0.0}
    batches = iter(loader)
    dist.barrier()
    init_s = time.perf_counter() - t_start
    t_loop = time.perf_counter()
    t_timed, samples_timed, samples_all = None, 0, 0
    for step in range(args.steps):
        if step == args.warmup:
            dist.barrier()  # every rank starts the timed part together
            t_timed = time.perf_counter()
        t0 = time.perf_counter()
        xb, yb = next(batches)
        samples_all += global_sizes[step]
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(ddp(xb), yb)
        loss.backward()  # DDP's bucketed all-reduce overlaps this and is waited for at its end
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        if t_timed is not None:
            phases["data_s"] += t1 - t0
            phases["compute_s"] += t2 - t1
            phases["optimizer_s"] += t3 - t2
            samples_timed += global_sizes[step]
    dist.barrier()
    t_end = time.perf_counter()

    result = {
        "peer": "pytorch-ddp-gloo-image-folder",
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "model": args.model_file,
        "data": root,
        "images": len(dataset),
        "image_size": args.image_size,
        "augment": args.augment,
        "loader_workers": args.loader_workers,
        "optimizer": args.optimizer,
    }
    result.update(
        measured(args, world, samples_timed, samples_all, (t_loop, t_timed, t_end), init_s,
                 loss.item(), phases)
    )
    if rank == 0:
        print(
            f"ddp: {world} ranks x {args.threads} threads + {args.loader_workers} loader processes,"
            f" {os.path.basename(args.model_file)}, {args.image_size}px, batch {args.global_batch},"
            f" {args.steps} steps: {result['samples_per_s']:.1f} samples/s over steps"
            f" {args.warmup}..{args.steps - 1}, loss {result['final_loss']:.3f}",
            flush=True,
        )
        if args.out:
            write_result(args.out, result)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
