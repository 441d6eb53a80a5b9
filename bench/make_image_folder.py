#!/usr/bin/env python3
"""Writes a benchmark image folder (torchvision's ImageFolder layout, ROOT/<class>/NNNNN.jpg).

  .venv/bin/python3 bench/make_image_folder.py --out /tmp/images-32 --count 5000 --size 32
  .venv/bin/python3 bench/make_image_folder.py --out /tmp/images-160 --count 5000 --size 160

No photographs are at hand, so each image is a stand-in with a photograph's kind of content for a
JPEG decoder: a smooth random colour field (a few random colours interpolated over the image),
a few soft-edged ellipses for edges, texture at a quarter of the resolution and per-pixel noise;
saved as baseline JPEG at --quality (default 90). It prints the mean file size in bytes per
pixel, the figure to compare with a real data set's (decoding time follows the pixels, and the
entropy-decoding part of it the bytes): about 1.1 at 32 px (where JPEG's fixed headers weigh)
and 0.35 at 160 px, near that of photo sets downscaled to 160 px (Imagenette's 160 px version,
about 7 KB an image). Seeded: the same arguments give the same files. The classes carry no
signal; the folder is for measuring decoding and augmentation, not learning.
"""

import argparse
import os
import time

import numpy as np
from PIL import Image, ImageDraw, ImageFilter


def draw_photo_like(size, rng):
    """An RGB size x size image: colour field + ellipses + noise (see the module's comment)."""
    grid = rng.integers(0, 256, size=(rng.integers(2, 6), rng.integers(2, 6), 3), dtype=np.uint8)
    image = Image.fromarray(grid, "RGB").resize((size, size), Image.BICUBIC)
    draw = ImageDraw.Draw(image)
    for _ in range(rng.integers(2, 6)):
        x0, y0 = rng.uniform(-0.2, 0.9, size=2) * size
        w, h = rng.uniform(0.1, 0.6, size=2) * size
        colour = tuple(int(c) for c in rng.integers(0, 256, size=3))
        draw.ellipse((x0, y0, x0 + w, y0 + h), fill=colour)
    image = image.filter(ImageFilter.GaussianBlur(radius=max(0.5, size / 96)))
    pixels = np.asarray(image, dtype=np.float32)
    coarse = max(2, size // 4)
    texture = rng.normal(0, 14, size=(coarse, coarse, 3)).astype(np.float32)
    for channel in range(3):
        pixels[:, :, channel] += np.asarray(
            Image.fromarray(texture[:, :, channel], "F").resize((size, size), Image.BILINEAR))
    pixels += rng.normal(0, 7, size=pixels.shape).astype(np.float32)
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the folder's root (created)")
    p.add_argument("--count", type=int, default=5000, help="images in all (default 5000)")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--size", type=int, default=32, help="side in pixels (default 32)")
    p.add_argument("--quality", type=int, default=90, help="JPEG quality (default 90)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()

    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    folders = [os.path.join(args.out, f"class_{c:03d}") for c in range(args.classes)]
    for folder in folders:
        os.makedirs(folder, exist_ok=True)
    total_bytes = 0
    for i in range(args.count):
        path = os.path.join(folders[i % args.classes], f"{i:06d}.jpg")
        draw_photo_like(args.size, rng).save(path, quality=args.quality)
        total_bytes += os.path.getsize(path)
    print(f"wrote {args.count} {args.size}x{args.size} JPEG images of {args.classes} classes under"
          f" {args.out}: {total_bytes / args.count / 1024:.1f} KiB per image,"
          f" {total_bytes / args.count / args.size**2:.2f} bytes per pixel,"
          f" in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
