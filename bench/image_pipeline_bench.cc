// Image-folder pipeline throughput: images decoded (libjpeg-turbo / libpng) and augmented per
// second by transient's loader (image_folder.h), the same work PyTorch's DataLoader does with
// torchvision's transforms in bench/image_pipeline_peer.py. Driven by image_pipeline.bench.sh.
//
//   image_pipeline_bench --data FOLDER --image-size S --augment crop|resized-crop
//                        [--threads T] [--epochs E] [--batch B]
// prints one JSON line: images_per_s over the epochs after the first, with the process's CPU
// seconds over them (images_per_cpu_s: per core, whatever else the machine runs).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "transient/train/image_folder.h"

namespace {

double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace transient::train;
  std::string data;
  std::string augment = "crop";
  ImageTransform transform;
  int threads = 1;
  int epochs = 3;
  std::int64_t batch = 128;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--data")
      data = value;
    else if (flag == "--image-size")
      transform.size = std::stoll(value);
    else if (flag == "--augment")
      augment = value;
    else if (flag == "--threads")
      threads = std::stoi(value);
    else if (flag == "--epochs")
      epochs = std::stoi(value);
    else if (flag == "--batch")
      batch = std::stoll(value);
    else {
      std::fprintf(stderr, "error: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (data.empty() || !parse_name<Augment>(augment) || epochs < 2) {
    std::fprintf(stderr,
                 "usage: image_pipeline_bench --data FOLDER --image-size S --augment "
                 "crop|resized-crop [--threads T] [--epochs E>=2] [--batch B]\n");
    return 2;
  }
  transform.augment = *parse_name<Augment>(augment);
  const auto folder = scan_image_folder(data);
  const auto n = static_cast<std::int64_t>(folder.files.size());
  ImageLoader loader(transform, threads);
  double timed_s = 0;
  double timed_cpu_s = 0;
  std::int64_t images = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    // As in training: the next batch is decoded while the current one is taken.
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = (i * 7919) % n;
    auto batch_of = [&](std::int64_t begin) {
      const auto end = std::min(n, begin + batch);
      return loader.load(folder, {order.begin() + begin, order.begin() + end}, epoch, true);
    };
    auto next = batch_of(0);
    for (std::int64_t begin = 0; begin < n; begin += batch) {
      auto current = next;
      if (begin + batch < n) next = batch_of(begin + batch);
      if (epoch > 0)
        images += current.get().images.size(0);
      else
        current.get();
    }
    if (epoch > 0) {
      timed_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      timed_cpu_s += cpu_seconds() - cpu_start;
    }
  }
  std::printf(
      "{\"images_per_s\": %.1f, \"images_per_cpu_s\": %.1f, \"images\": %lld, \"seconds\": %.3f, "
      "\"cpu_s\": %.3f, \"threads\": %d}\n",
      static_cast<double>(images) / timed_s, static_cast<double>(images) / timed_cpu_s,
      static_cast<long long>(images), timed_s, timed_cpu_s, threads);
  return 0;
}
