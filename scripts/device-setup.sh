# Sourced on the GPU machine, in the repository's root, after scripts/device-prepare.sh here:
# the programs built here find the machine's torch where they look for .venv's (their run path
# names /work/main/.venv/lib/python3.11/site-packages/torch/lib), the carried Debian libraries,
# and the carried cut of Fashion-MNIST where the tests look for the data set.
if ! command -v nvidia-smi >/dev/null; then
  # It replaces .venv's packages with a link: never on this project's own machines.
  echo "scripts/device-setup.sh is for the GPU machine only (no nvidia-smi here)" >&2
  return 1 2>/dev/null || exit 1
fi
root=$PWD
if [[ $root != /work/main ]]; then mkdir -p /work && ln -sfn "$root" /work/main; fi
site=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')
mkdir -p .venv/lib/python3.11 .venv/bin
ln -sfn "$site" .venv/lib/python3.11/site-packages
printf '#!/bin/sh\nexec python3 "$@"\n' >.venv/bin/python3
chmod +x .venv/bin/python3
# `transient` here is the torch-free program, which needs Debian's CBC and cairo: the torch
# commands are all these runs need, and transient-torch runs them itself.
printf '#!/bin/sh\nexec %s/build/transient-torch "$@"\n' "$root" >build/transient
chmod +x build/transient
export LD_LIBRARY_PATH=$root/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [[ -d .dev/fashion-mnist && ! -e /usr/share/datasets/fashion-mnist ]]; then
  mkdir -p /usr/share/datasets && ln -s "$root/.dev/fashion-mnist" /usr/share/datasets/fashion-mnist
fi
# The tests name the shared data as /work/main/../shared/data: beside the repository's real
# folder, /work/main being a link to it.
shared=$(dirname "$(pwd -P)")/shared
if [[ -d .dev/shared-data && ! -e $shared/data ]]; then
  mkdir -p "$shared" && ln -s "$root/.dev/shared-data" "$shared/data"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
