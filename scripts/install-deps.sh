#!/usr/bin/env bash
# Installs the Debian 12 packages transient needs to build, test and benchmark.
# Idempotent: when everything is present it only asks dpkg and returns in well under a second.
# Works as root or through sudo.
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ make pkg-config
  # libraries
  libtorch-dev libfmt-dev libspdlog-dev nlohmann-json3-dev libcli11-dev libtomlplusplus-dev
  libcpp-httplib-dev libeigen3-dev coinor-libcbc-dev libcsv-dev librsvg2-dev
  # the trainer: Gloo's headers for c10d's ProcessGroupGloo, zlib for the gzipped data set
  libgloo-dev zlib1g-dev
  # tests and benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev clang-format
  # data
  dataset-fashion-mnist
  # the peer to beat in bench/ and the torch.load interoperability test
  python3-torch
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

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
