#!/usr/bin/python3
"""The PyTorch DistributedDataParallel peer of `transient train`, for bench/train_vs_ddp.bench.sh.

Trains the same model on the same data with the same global batch, optimiser and number of steps
as `transient train`, as DDP over the Gloo backend, one process per rank, launched by torchrun:

  torchrun --standalone --nnodes 1 --nproc_per_node 2 --redirects 1:2 --tee 0:1 \
      bench/ddp_peer.py --model cnn --steps 300 --global-batch 128 --threads 1 --out peer.json

(Debian's torchrun 1.13 on Python 3.11 crashes parsing its own defaults unless --redirects and
--tee are given.) Each of the N ranks gets global_batch / N samples of every step, taken from a
seeded permutation of the training set through a global cursor, as the trainer does (the data
order differs: torch.randperm, not the trainer's own permutation; the learning rate is constant,
not the trainer's warm-up and cosine: neither changes the work of a step). Images are normalised
with the trainer's mean 0.2860 and std 0.3530 (src/transient/train/fashion_mnist.cc).

Throughput is measured over the steady state only: the first --warmup steps (default 10) are run
but not timed, so that one-off costs (allocator growth, Gloo connection set-up, DDP's first-step
bucket rebuild) are excluded. Rank 0 prints one line and writes a JSON object (--out) with
samples_per_s (steady state), samples_per_s_whole (every step, from the first step to the last),
steps, warmup_steps, timed_steps, wall_s (the whole training loop), init_s, and per-phase means
over the timed steps of rank 0: data_s, compute_s (forward, backward and DDP's all-reduce, which
overlaps the backward pass and so cannot be separated), optimizer_s, step_s.
"""

import argparse
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

DATA_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    """Reads a gzipped IDX file into a numpy array of its declared shape (uint8 data only)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * ndim, raw[4 : 4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {data.size} bytes of data, header says {dims}")
    return data.reshape(dims)


def load_train(data_dir, mean, std):
    images = read_idx(os.path.join(data_dir, "train-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, "train-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.astype(np.float32)).div_(255.0).sub_(mean).div_(std)
    return x.unsqueeze(1).contiguous(), torch.from_numpy(labels.astype(np.int64))


class Cnn(nn.Module):
    """conv3x3 1->32 pad1, ReLU, maxpool2; conv3x3 32->64 pad1, ReLU, maxpool2;
    linear 3136->128, ReLU; linear 128->10 (the `cnn` of `transient train`)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(3136, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


class Mlp(nn.Module):
    """784->256->10 with ReLU (the `mlp` of `transient train`)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def conv3x3(cin, cout, stride):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and a shortcut (1x1 + batch norm when the shape
    changes), as `BasicBlock` in src/transient/train/models.cc."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = conv3x3(cin, cout, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = conv3x3(cout, cout, 1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut_conv = None
        self.shortcut_bn = None
        if stride != 1 or cin != cout:
            self.shortcut_conv = nn.Conv2d(cin, cout, 1, stride=stride, bias=False)
            self.shortcut_bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        shortcut = x if self.shortcut_conv is None else self.shortcut_bn(self.shortcut_conv(x))
        return F.relu(y + shortcut)


class ResNet(nn.Module):
    """CIFAR-style ResNet (3 stages of 16, 32, 64 channels) on 28x28x1, registered in the order
    of `ResNet` in src/transient/train/models.cc (conv, bn, fc, then the blocks)."""

    def __init__(self, blocks_per_stage):
        super().__init__()
        self.conv = conv3x3(1, 16, 1)
        self.bn = nn.BatchNorm2d(16)
        self.fc = nn.Linear(64, 10)
        self.blocks = []
        cin = 16
        for stage, width in enumerate((16, 32, 64)):
            for b in range(blocks_per_stage):
                block = BasicBlock(cin, width, 2 if stage > 0 and b == 0 else 1)
                self.add_module(f"stage{stage + 1}_block{b + 1}", block)
                self.blocks.append(block)
                cin = width
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        for block in self.blocks:
            x = block(x)
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


MODELS = {
    "cnn": Cnn,
    "mlp": Mlp,
    "resnet20": lambda: ResNet(3),
    "resnet32": lambda: ResNet(5),
}


def write_result(path, result):
    """`result` as indented JSON in `path`, written whole or not at all."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def measured(args, world, samples_timed, samples_all, times, init_s, final_loss, phases):
    """The result fields every DDP peer reports: throughput over the steps after the first
    --warmup (`samples_per_s`) and over all of them, the setting, and each phase's mean seconds
    per timed step. `times` is (loop start, timed start, end) from time.perf_counter()."""
    t_loop, t_timed, t_end = times
    timed = args.steps - args.warmup
    result = {
        "workers": world,
        "threads": args.threads,
        "global_batch": args.global_batch,
        "steps": args.steps,
        "warmup_steps": args.warmup,
        "timed_steps": timed,
        "samples_per_s": samples_timed / (t_end - t_timed),
        "samples_per_s_whole": samples_all / (t_end - t_loop),
        "wall_s": t_end - t_loop,
        "init_s": init_s,
        "final_loss": final_loss,
        "step_s": (t_end - t_timed) / timed,
    }
    result.update({k: v / timed for k, v in phases.items()})
    return result


def shard(batch, world, rank):
    """Rank's part (offset, count) of a step's batch: the first batch % world ranks take one
    sample more, as in src/transient/train/sharding.h."""
    base, extra = divmod(batch, world)
    return rank * base + min(rank, extra), base + (1 if rank < extra else 0)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=sorted(MODELS), default="cnn")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=10, help="untimed first steps (default 10)")
    p.add_argument("--global-batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads per rank")
    p.add_argument("--mean", type=float, default=0.2860, help="normalisation mean")
    p.add_argument("--std", type=float, default=0.3530, help="normalisation std")
    p.add_argument("--data-dir", default=DATA_DIR)
    p.add_argument("--channels-last", action="store_true",
                   help="the model's convolution weights channels-last (transient's layout for "
                        "the ResNets; DDP's users must ask for it)")
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

    x, y = load_train(args.data_dir, args.mean, args.std)
    n = x.shape[0]
    torch.manual_seed(args.seed)
    model = MODELS[args.model]()  # same seed on every rank; DDP also broadcasts rank 0's weights
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    # Batch-norm buffers are not broadcast every step (transient does not either: each worker's
    # running statistics are its own until an evaluation); DDP's default would add a broadcast.
    ddp = nn.parallel.DistributedDataParallel(model, broadcast_buffers=False)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)

    gen = torch.Generator().manual_seed(args.seed)
    perm, cursor, epoch = torch.randperm(n, generator=gen), 0, 0
    phases = {"data_s": 0.0, "compute_s": 0.0, "optimizer_s": 0.0}
    dist.barrier()
    init_s = time.perf_counter() - t_start
    t_loop = time.perf_counter()
    t_timed, samples_timed, samples_all = None, 0, 0
    for step in range(args.steps):
        if step == args.warmup:
            dist.barrier()  # every rank starts the timed part together
            t_timed = time.perf_counter()
        t0 = time.perf_counter()
        if cursor == n:  # new epoch, new permutation
            perm, cursor, epoch = torch.randperm(n, generator=gen), 0, epoch + 1
        batch = min(args.global_batch, n - cursor)  # an epoch's last step takes what is left
        begin, count = shard(batch, world, rank)
        idx = perm[cursor + begin : cursor + begin + count]
        cursor += batch
        samples_all += batch
        xb, yb = x.index_select(0, idx), y.index_select(0, idx)
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
            samples_timed += batch
    dist.barrier()
    t_end = time.perf_counter()

    result = {
        "peer": "pytorch-ddp-gloo",
        "torch": torch.__version__,
        "model": args.model,
        "channels_last": args.channels_last,
    }
    result.update(
        measured(args, world, samples_timed, samples_all, (t_loop, t_timed, t_end), init_s,
                 loss.item(), phases)
    )
    if rank == 0:
        print(
            f"ddp: {world} ranks x {args.threads} threads, {args.model}, batch {args.global_batch}, "
            f"{args.steps} steps: {result['samples_per_s']:.1f} samples/s over steps "
            f"{args.warmup}..{args.steps - 1}, loss {result['final_loss']:.3f}",
            flush=True,
        )
        if args.out:
            write_result(args.out, result)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
