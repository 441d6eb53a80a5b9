#!/usr/bin/env python3
"""The PyTorch peer of the image-folder pipeline benchmark: images decoded and augmented per
second by torchvision's ImageFolder and transforms under PyTorch's DataLoader.

  .venv/bin/python3 bench/make_image_folder.py --out /tmp/images-32 --size 32
  .venv/bin/python3 bench/image_pipeline_peer.py --data /tmp/images-32 --image-size 32
  .venv/bin/python3 bench/make_image_folder.py --out /tmp/images-160 --size 160
  .venv/bin/python3 bench/image_pipeline_peer.py --data /tmp/images-160 --image-size 128 \\
      --augment resized-crop

The training transforms are those of `transient train` on an image folder
(src/transient/train/image_folder.h), in torchvision's words:
- crop: Resize(S), CenterCrop(S) (both leave an S x S image as it is), RandomCrop(S,
  padding=S // 8) (zeros), RandomHorizontalFlip(), ToTensor(), Normalize(mean, std);
- resized-crop: RandomResizedCrop(S), RandomHorizontalFlip(), ToTensor(), Normalize(mean, std).
Images are read by ImageFolder's default loader (Pillow, converted to RGB), shuffled, collated
into batches of --batch by the DataLoader's --workers worker processes (each with one torch
thread, DataLoader's default; 0 = in the main process), and consumed by the main process, which
does nothing else (torch.set_num_threads(1)). Workers are persistent, so the first epoch carries
their start-up and the files' first read; the figure is measured over the epochs after it.

Prints one JSON line: images_per_s, images (timed), seconds (timed), workers,
images_per_s_per_worker, cpu_s (CPU seconds of the workers and the main process over the timed
epochs, from Linux's /proc), main_cpu_s (the main process's part of it), images_per_cpu_s (the
per-core rate that a busy machine does not hide, where images_per_s_per_worker undercounts a
core shared with other processes), torch, torchvision, pillow and the settings.
"""

import argparse
import glob
import json
import os
import sys
import time

import PIL
import torch
import torchvision
from torchvision import transforms


def training_transform(size, augment, mean, std):
    if augment == "crop":
        steps = [
            transforms.Resize(size),
            transforms.CenterCrop(size),
            transforms.RandomCrop(size, padding=size // 8),
        ]
    else:
        steps = [transforms.RandomResizedCrop(size)]
    return transforms.Compose(steps + [
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean, std),
    ])


def children_cpu_s():
    """CPU seconds (user + system) used so far by this process's live child processes (the
    DataLoader's workers), from Linux's /proc; None where /proc does not tell."""
    try:
        pids = set()
        for path in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
            with open(path) as f:
                pids.update(f.read().split())
        total_ticks = 0
        for pid in pids:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total_ticks += int(fields[11]) + int(fields[12])  # utime, stime
        return total_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def floats(text):
    return [float(v) for v in text.split(",")]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="an ImageFolder root (ROOT/<class>/<image>)")
    p.add_argument("--image-size", type=int, default=32, help="S (default 32)")
    p.add_argument("--workers", type=int, default=1,
                   help="DataLoader num_workers (default 1: one core decodes and augments)")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--epochs", type=int, default=2, help="the first is not timed (default 2)")
    p.add_argument("--augment", choices=("crop", "resized-crop"), default="crop")
    p.add_argument("--mean", type=floats, default=[0.5, 0.5, 0.5])
    p.add_argument("--std", type=floats, default=[0.25, 0.25, 0.25])
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if args.epochs < 2:
        p.error("--epochs must be at least 2: the first one is a warm-up")
    return args


def main():
    args = parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    dataset = torchvision.datasets.ImageFolder(
        args.data, transform=training_transform(args.image_size, args.augment, args.mean, args.std))
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch, shuffle=True, num_workers=args.workers,
        persistent_workers=args.workers > 0)

    images, t_timed = 0, None
    for epoch in range(args.epochs):
        if epoch == 1:
            t_timed, cpu_main = time.perf_counter(), time.process_time()
            cpu_workers = children_cpu_s()
        for x, _ in loader:
            if epoch >= 1:
                images += x.shape[0]
    seconds = time.perf_counter() - t_timed
    main_cpu_s = time.process_time() - cpu_main
    cpu_s = main_cpu_s
    workers_cpu_s = children_cpu_s()
    if args.workers > 0 and cpu_workers is not None and workers_cpu_s is not None:
        cpu_s += workers_cpu_s - cpu_workers
    else:
        cpu_s = None if args.workers > 0 else cpu_s

    result = {
        "peer": "pytorch-dataloader-torchvision",
        "images_per_s": images / seconds,
        "images": images,
        "seconds": seconds,
        "workers": args.workers,
        "images_per_s_per_worker": images / seconds / max(1, args.workers),
        "cpu_s": cpu_s,
        "main_cpu_s": main_cpu_s,
        "images_per_cpu_s": images / cpu_s if cpu_s else None,
        "image_size": args.image_size,
        "augment": args.augment,
        "batch": args.batch,
        "timed_epochs": args.epochs - 1,
        "files": len(dataset),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "pillow": PIL.__version__,
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    sys.exit(main())
