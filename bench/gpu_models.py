#!/usr/bin/env python3
"""The models and synthetic data of the GPU benchmark (bench/gpu_vs_ddp.bench.sh):

  OUT/resnet18.pt, OUT/resnet50.pt   torchvision's ResNet-18 and ResNet-50 (num_classes=10) as
                                     TorchScript, in training mode, seeded (torch.manual_seed(1))
  OUT/npy-SIZE/images.npy            SAMPLES random uint8 images [N, 3, SIZE, SIZE]
  OUT/npy-SIZE/labels.npy            their labels, 0..9 (int64)

  python3 bench/gpu_models.py --out /tmp/gpu --size 32 --size 224 --samples 8192
"""

import argparse
import os

import numpy as np
import torch
import torchvision


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--size", type=int, action="append", default=[])
    parser.add_argument("--samples", type=int, default=8192)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in ("resnet18", "resnet50"):
        path = os.path.join(args.out, name + ".pt")
        if not os.path.exists(path):
            torch.manual_seed(1)
            model = getattr(torchvision.models, name)(num_classes=10)
            model.train()
            torch.jit.script(model).save(path)
    rng = np.random.default_rng(1)
    for size in args.size or [32]:
        folder = os.path.join(args.out, f"npy-{size}")
        if os.path.exists(os.path.join(folder, "labels.npy")):
            continue
        os.makedirs(folder, exist_ok=True)
        images = np.lib.format.open_memmap(os.path.join(folder, "images.npy"), mode="w+",
                                           dtype=np.uint8, shape=(args.samples, 3, size, size))
        for at in range(0, args.samples, 1024):
            count = min(1024, args.samples - at)
            images[at:at + count] = rng.integers(0, 256, size=(count, 3, size, size),
                                                 dtype=np.uint8)
        images.flush()
        del images
        np.save(os.path.join(folder, "labels.npy"),
                rng.integers(0, 10, size=args.samples, dtype=np.int64))


if __name__ == "__main__":
    main()
