#!/usr/bin/env bash
# Installs everything Parallax needs on a fresh Debian 12 machine (run as root).
# Idempotent: packages already present are left as they are.
set -euo pipefail
PKGS=(
  build-essential cmake pkg-config git
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev libonnx-testdata
  llvm-19-dev libopenmpi-dev openmpi-bin libcriterion-dev
  libopenblas-dev libopenblas0-pthread
  python3 python3-numpy python3-torch python3-onnx python3-pip python3-venv
  clang-14 libclang-rt-14-dev xxd procps
  chromium
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
