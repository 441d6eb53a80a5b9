#!/usr/bin/env python3
"""Your own model on your own images: torchvision's ResNet-18 trained by `transient train`.

Writes, under OUT (default /tmp/resnet18-image-folder):
  OUT/resnet18.pt      torchvision.models.resnet18(num_classes=10) as TorchScript, in training
                       mode: the file `transient train --model` takes ([N,3,S,S] -> [N,10]);
  OUT/images/train/<class>/*.jpg|*.png and OUT/images/val/<class>/*.png|*.jpg
                       a small synthetic image folder (torchvision's ImageFolder layout), one
                       shape and colour per class on a noisy background, seeded;
and prints the `transient train` command line to run next:

  .venv/bin/python3 examples/resnet18_image_folder.py --out /tmp/rn18
  build/transient train --model /tmp/rn18/resnet18.pt --data /tmp/rn18/images --image-size 32 ...

Then `--check` loads a checkpoint of that training into torchvision's ResNet-18, as any PyTorch
user would (`model.load_state_dict(torch.load(ckpt)["model"])`), and prints its accuracy on
OUT/images/val with torchvision's own transforms:

  .venv/bin/python3 examples/resnet18_image_folder.py --out /tmp/rn18 --check JOB_DIR

CHECKPOINT is a step-NNNNNNNN.pt file or a job directory (its newest checkpoint is taken).
--mean, --std and --size are those the training used: the job's summary.json records them.

So that every code path of the loader is met, one image in 10 is grey-scale, one in 4 is stored
in the other format (PNG among the training JPEGs, JPEG among the validation PNGs), and one in 8
is not S x S (larger, not square: it is resized and centre-cropped first).
"""

import argparse
import glob
import json
import os
import sys
import time

import numpy as np
import torch
import torchvision
from PIL import Image, ImageDraw
from torchvision import transforms

CLASSES = (
    "band_horizontal",
    "band_vertical",
    "diagonal",
    "disc",
    "ring",
    "square",
    "square_outline",
    "cross",
    "checkerboard",
    "triangle",
)
# One hue per class (RGB); grey-scale copies keep only the shape, which alone tells the class.
COLOURS = (
    (230, 25, 75),
    (60, 180, 75),
    (255, 225, 25),
    (0, 130, 200),
    (245, 130, 48),
    (145, 30, 180),
    (70, 240, 240),
    (240, 50, 230),
    (210, 245, 60),
    (250, 190, 212),
)


def draw_sample(label, width, height, rng):
    """An RGB image of class `label`: its shape in its colour, placed and sized at random, over a
    dark background with per-pixel noise."""
    background = rng.integers(0, 80, size=3)
    noise = rng.normal(0, 18, size=(height, width, 3))
    pixels = np.clip(background + noise, 0, 255).astype(np.uint8)
    image = Image.fromarray(pixels, "RGB")
    draw = ImageDraw.Draw(image)
    jitter = rng.integers(-25, 26, size=3)
    colour = tuple(int(c) for c in np.clip(np.array(COLOURS[label]) + jitter, 0, 255))
    s = min(width, height)
    half = s * rng.uniform(0.22, 0.32)  # half the shape's extent
    cx = width / 2 + rng.uniform(-0.12, 0.12) * s
    cy = height / 2 + rng.uniform(-0.12, 0.12) * s
    box = (cx - half, cy - half, cx + half, cy + half)
    line = max(2, round(s / 10))
    name = CLASSES[label]
    if name == "band_horizontal":
        draw.rectangle((0, cy - line, width, cy + line), fill=colour)
    elif name == "band_vertical":
        draw.rectangle((cx - line, 0, cx + line, height), fill=colour)
    elif name == "diagonal":
        draw.line((cx - s, cy - s, cx + s, cy + s), fill=colour, width=line + 1)
    elif name == "disc":
        draw.ellipse(box, fill=colour)
    elif name == "ring":
        draw.ellipse(box, outline=colour, width=line)
    elif name == "square":
        draw.rectangle(box, fill=colour)
    elif name == "square_outline":
        draw.rectangle(box, outline=colour, width=line)
    elif name == "cross":
        draw.rectangle((cx - half, cy - line / 2, cx + half, cy + line / 2), fill=colour)
        draw.rectangle((cx - line / 2, cy - half, cx + line / 2, cy + half), fill=colour)
    elif name == "checkerboard":
        cell = max(2, s // 8)
        for y in range(0, height, cell):
            for x in range(0, width, cell):
                if (x // cell + y // cell) % 2 == 0:
                    draw.rectangle((x, y, x + cell - 1, y + cell - 1), fill=colour)
    elif name == "triangle":
        draw.polygon([(cx, cy - half), (cx - half, cy + half), (cx + half, cy + half)], fill=colour)
    return image


def write_split(root, per_class, size, main_format, rng):
    """Writes per_class images of each class under root/<class>/; returns how many."""
    other_format = "png" if main_format == "jpg" else "jpg"
    count = 0
    for label, name in enumerate(CLASSES):
        folder = os.path.join(root, f"{label}_{name}")
        os.makedirs(folder, exist_ok=True)
        for i in range(per_class):
            width, height = size, size
            if i % 8 == 7:
                width, height = size * 5 // 4, size * 9 // 8
            image = draw_sample(label, width, height, rng)
            if i % 10 == 9:
                image = image.convert("L")
            fmt = other_format if i % 4 == 3 else main_format
            path = os.path.join(folder, f"{i:05d}.{fmt}")
            if fmt == "jpg":
                image.save(path, quality=90)
            else:
                image.save(path)
            count += 1
    return count


def export_model(path):
    """ResNet-18 for 10 classes, scripted in training mode (batch norm uses batch statistics and
    updates its running ones, as `transient train` needs)."""
    model = torchvision.models.resnet18(num_classes=len(CLASSES))
    model.train()
    scripted = torch.jit.script(model)
    scripted.save(path)
    reloaded = torch.jit.load(path)
    out = reloaded(torch.zeros(2, 3, 32, 32))
    if tuple(out.shape) != (2, len(CLASSES)):
        raise RuntimeError(f"{path}: output shape {tuple(out.shape)}, expected (2, {len(CLASSES)})")


def newest_checkpoint(path):
    """`path` itself if it is a file; else the newest step-*.pt of the job directory `path`."""
    if os.path.isfile(path):
        return path
    found = sorted(glob.glob(os.path.join(path, "checkpoints", "step-*.pt")))
    found = found or sorted(glob.glob(os.path.join(path, "step-*.pt")))
    if not found:
        print(f"error: {path}: no checkpoint file, and no checkpoints/step-*.pt in it",
              file=sys.stderr)
        sys.exit(2)
    return found[-1]


def check(args):
    ckpt = newest_checkpoint(args.check)
    # The job's summary says what the images were normalised with.
    summary = os.path.join(os.path.dirname(os.path.dirname(ckpt)), "summary.json")
    if (args.mean is None or args.std is None or args.size is None) and os.path.isfile(summary):
        with open(summary) as f:
            recorded = json.load(f)
        args.mean = args.mean or recorded.get("image_mean")
        args.std = args.std or recorded.get("image_std")
        args.size = args.size or recorded.get("image_size")
    args.size = args.size or 32
    args.mean = args.mean or [0.5, 0.5, 0.5]
    args.std = args.std or [0.25, 0.25, 0.25]
    model = torchvision.models.resnet18(num_classes=len(CLASSES))
    model.load_state_dict(torch.load(ckpt, map_location="cpu")["model"])
    model.eval()
    transform = transforms.Compose([
        transforms.Resize(args.size),
        transforms.CenterCrop(args.size),
        transforms.ToTensor(),
        transforms.Normalize(args.mean, args.std),
    ])
    val = torchvision.datasets.ImageFolder(os.path.join(args.data, "val"), transform=transform)
    loader = torch.utils.data.DataLoader(val, batch_size=100)
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
    print(f"{ckpt}: accuracy {correct / len(val):.3f} ({correct}/{len(val)} validation images,"
          f" chance {1 / len(CLASSES):.2f})")


def floats(text):
    values = [float(v) for v in text.split(",")]
    if len(values) != 3:
        raise argparse.ArgumentTypeError(f"{text!r}: expected three numbers, e.g. 0.5,0.5,0.5")
    return values


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="/tmp/resnet18-image-folder", help="output folder")
    p.add_argument("--size", type=int,
                   help="image side S in pixels (default 32; for --check, the side the job "
                        "trained at, from its summary.json)")
    p.add_argument("--train-per-class", type=int, default=40)
    p.add_argument("--val-per-class", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--check", metavar="CHECKPOINT",
                   help="print the validation accuracy of a checkpoint (file or job directory)")
    p.add_argument("--data", help="image folder for --check (default OUT/images)")
    p.add_argument("--mean", type=floats,
                   help="per channel, for --check (default: the job's summary.json)")
    p.add_argument("--std", type=floats,
                   help="per channel, for --check (default: the job's summary.json)")
    args = p.parse_args()
    args.data = args.data or os.path.join(args.out, "images")
    return args


def main():
    args = parse_args()
    if args.check:
        check(args)
        return
    args.size = args.size or 32
    start = time.perf_counter()
    os.makedirs(args.out, exist_ok=True)
    model_path = os.path.join(args.out, "resnet18.pt")
    export_model(model_path)
    rng = np.random.default_rng(args.seed)
    images = os.path.join(args.out, "images")
    n_train = write_split(os.path.join(images, "train"), args.train_per_class, args.size, "jpg",
                          rng)
    n_val = write_split(os.path.join(images, "val"), args.val_per_class, args.size, "png", rng)
    print(f"wrote {model_path} and {n_train} training + {n_val} validation images of"
          f" {len(CLASSES)} classes under {images} in {time.perf_counter() - start:.1f} s")
    print("next:")
    print(f"  build/transient train --model {model_path} --data {images} --image-size {args.size}"
          f" --workers 2 --steps 60 --global-batch 32 --optimizer adamw --lr 0.001"
          f" --job-dir {os.path.join(args.out, 'job')}")
    print(f"  {sys.executable} {sys.argv[0]} --out {args.out}"
          f" --check {os.path.join(args.out, 'job')}")


if __name__ == "__main__":
    main()
