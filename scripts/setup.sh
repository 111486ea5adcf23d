#!/usr/bin/env bash
# Installs what qattn needs to build and test from Debian 12's packages.
# Idempotent, and silent when everything is already there.
set -euo pipefail

# python3-torch (1.13, CPU) runs the PyTorch-side tests that need no GPU.
packages=(cmake ninja-build g++ make python3 python3-numpy python3-torch
          llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
  --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
