// Image files that tests write themselves: JPEG by libjpeg-turbo (TurboJPEG), PNG by libpng, and
// an image folder of learnable classes (class k has a bright band at rows 3k..3k+2 over a dim
// random background).
#pragma once

#include <png.h>
#include <turbojpeg.h>

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace transient::train::testing {

// `image` uint8 [H, W, 3] (RGB) or [H, W, 4] (CMYK, the samples as stored) as a JPEG file of
// `quality`.
inline void write_jpeg(const std::string& path, const torch::Tensor& image, int quality = 95) {
  const auto rgb = image.contiguous();
  const int format = rgb.size(2) == 4 ? TJPF_CMYK : TJPF_RGB;
  tjhandle handle = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int rc =
      tjCompress2(handle, rgb.data_ptr<std::uint8_t>(), static_cast<int>(rgb.size(1)), 0,
                  static_cast<int>(rgb.size(0)), format, &jpeg, &size, TJSAMP_444, quality, 0);
  if (rc == 0) std::ofstream(path, std::ios::binary).write(reinterpret_cast<char*>(jpeg), size);
  tjFree(jpeg);
  tjDestroy(handle);
}

// `image` uint8 [H, W, C] (C = 1 grey, 3 RGB, 4 RGBA) as a PNG file.
inline void write_png(const std::string& path, const torch::Tensor& image) {
  const auto pixels = image.contiguous();
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(pixels.size(1));
  png.height = static_cast<png_uint_32>(pixels.size(0));
  const auto channels = pixels.size(2);
  png.format = channels == 1 ? PNG_FORMAT_GRAY : channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  png_image_write_to_file(&png, path.c_str(), 0, pixels.data_ptr<std::uint8_t>(), 0, nullptr);
}

// The picture of class `label`: a bright band at rows 3k..3k+2 (k = label % 10, its colour by
// label / 10) over a dim random background, `side` x `side`.
inline torch::Tensor class_picture(int label, int side, std::mt19937& draw) {
  auto image = torch::empty({side, side, 3}, torch::kUInt8);
  auto* pixel = image.data_ptr<std::uint8_t>();
  for (int row = 0; row < side; ++row) {
    for (int col = 0; col < side; ++col) {
      for (int c = 0; c < 3; ++c) {
        const bool band = row * 32 / side / 3 == label % 10 && (c == label / 10 % 3 || label < 10);
        *pixel++ = static_cast<std::uint8_t>(band ? 230 : static_cast<int>(draw() % 60));
      }
    }
  }
  return image;
}

// ROOT/<class name>/<i>.jpg|png: `per_class` pictures of each of `classes` classes, every third
// a PNG (every seventh of those grey), the rest JPEG.
inline void write_image_folder(const std::string& root, int classes, int per_class, int side,
                               std::uint32_t seed) {
  std::mt19937 draw(seed);
  for (int label = 0; label < classes; ++label) {
    char name[32];
    std::snprintf(name, sizeof(name), "class-%02d", label);
    const auto dir = std::filesystem::path(root) / name;
    std::filesystem::create_directories(dir);
    for (int i = 0; i < per_class; ++i) {
      const auto picture = class_picture(label, side, draw);
      const std::string stem = (dir / std::to_string(i)).string();
      if (i % 3 != 0) {
        write_jpeg(stem + ".jpg", picture);
      } else if (i % 7 == 0) {
        write_png(stem + ".png", picture.to(torch::kFloat32).mean(2, true).to(torch::kUInt8));
      } else {
        write_png(stem + ".png", picture);
      }
    }
  }
}

}  // namespace transient::train::testing
