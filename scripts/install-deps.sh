#!/usr/bin/env bash
# Installs what transient needs to build, test and benchmark: Debian 12 packages, and libtorch
# from PyPI's `torch` wheel (pinned; CUDA and NCCL compiled in) in the project-local virtual
# environment .venv/, whose python also runs the Python peers in bench/.
# With TORCH_PYTHON=/path/to/python3 set, that python's torch is used instead and nothing is
# installed from PyPI (a GPU machine with torch installed and no registry).
# Idempotent: when everything is present it only asks dpkg and looks at .venv, in well under a
# second. Works as root or through sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

torch_version=2.11.0
numpy_version=2.4.6  # torch.from_numpy and the tests that write .npy files
# The image-folder example and benchmark peers (examples/resnet18_image_folder.py,
# bench/image_pipeline_peer.py, bench/ddp_image_peer.py): torchvision's ResNet-18, ImageFolder
# and transforms. 0.26.0 is the release that pins torch==2.11.0; it is installed with --no-deps
# so that it can never replace the pinned torch. Pillow decodes the JPEG and PNG files.
torchvision_version=0.26.0
pillow_version=13.0.0

packages=(
  # build
  cmake ninja-build g++ make pkg-config
  # libraries
  libfmt-dev libspdlog-dev nlohmann-json3-dev libcli11-dev libtomlplusplus-dev
  libcpp-httplib-dev libeigen3-dev coinor-libcbc-dev libcsv-dev librsvg2-dev
  # the trainer: libdeflate for the gzipped data set, zlib for checkpoints' CRC-32; gloo's
  # headers only, which c10d's ProcessGroupGloo.hpp includes and the torch wheel does not ship
  # (what runs is the gloo built into libtorch_cpu; Debian's libgloo is never linked)
  libdeflate-dev zlib1g-dev libgloo-dev
  # image folders: JPEG by libjpeg-turbo's TurboJPEG API, PNG by libpng
  libturbojpeg0-dev libpng-dev
  # the job token's challenge-response (HMAC-SHA256, nonces)
  libssl-dev
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev clang-format
  # emulated hosts' latency (tests/tools/link_delay: an NFQUEUE rule and the kernel's netfilter
  # queue, since tc's netem is not in every kernel)
  iptables libnetfilter-queue-dev
  # reports: Chart.js is embedded in `transient report`'s pages; the browser tests open them in
  # headless Chromium
  libjs-chart.js chromium
  # the libFuzzer targets (scripts/fuzz.sh): clang and its fuzzer and sanitizer runtimes
  clang-14 libclang-rt-14-dev
  # data
  dataset-fashion-mnist
  # the project-local environment that carries libtorch (PyPI's torch wheel)
  python3 python3-venv
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done

if [[ ${#missing[@]} -gt 0 ]]; then
  echo "install-deps: installing ${missing[*]}" >&2
  if [[ $(id -u) -eq 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "error: missing packages (${missing[*]}) and neither root nor sudo is available;" \
         "install them with apt-get" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q "${missing[@]}"
fi

if [[ -n "${TORCH_PYTHON:-}" ]]; then
  if ! "$TORCH_PYTHON" -c 'import torch' 2>/dev/null; then
    echo "error: TORCH_PYTHON=$TORCH_PYTHON cannot import torch; accepted: a python3 with" \
         "PyTorch 2.x installed" >&2
    exit 2
  fi
  if ! "$TORCH_PYTHON" -c 'import torchvision, PIL' 2>/dev/null; then
    echo "install-deps: warning: TORCH_PYTHON=$TORCH_PYTHON has no torchvision or Pillow;" \
         "the image-folder example and peers will not run" >&2
  fi
  exit 0
fi

# Debian's python3 makes the environment, so that it does not depend on whichever python3 is
# first on PATH. The dist-info folders tell, without starting python, that the pins are installed.
site=".venv/lib/python3*/site-packages"
if ! compgen -G "$site/torch-${torch_version}.dist-info" >/dev/null ||
   ! compgen -G "$site/numpy-${numpy_version}.dist-info" >/dev/null; then
  echo "install-deps: installing torch ${torch_version} from PyPI into .venv/" >&2
  [[ -x .venv/bin/python3 ]] || /usr/bin/python3 -m venv .venv
  .venv/bin/python3 -m pip install -q --disable-pip-version-check "torch==${torch_version}" \
    "numpy==${numpy_version}"
fi
if ! compgen -G "$site/torchvision-${torchvision_version}.dist-info" >/dev/null ||
   ! compgen -G "$site/[Pp]illow-${pillow_version}.dist-info" >/dev/null; then
  echo "install-deps: installing torchvision ${torchvision_version} and Pillow" \
       "${pillow_version} from PyPI into .venv/" >&2
  .venv/bin/python3 -m pip install -q --disable-pip-version-check --no-deps \
    "torchvision==${torchvision_version}" "pillow==${pillow_version}"
fi
