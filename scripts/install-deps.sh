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
  clang-14 libclang-rt-14-dev lld xxd procps zlib1g-dev
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
# ONNX Runtime for Node.js (onnxruntime-node, from the npm registry): the
# independent runtime the --save-infer test checks served models with
# (tests/tools/ort_node_path.sh finds it). Debian's nodejs and npm, or a
# nodejs that ships its own npm. ONNXRUNTIME_NODE_INSTALL=skip: the CPU
# build is in the npm package; its install script would otherwise fetch the
# CUDA provider from outside npm.
ORT_NODE_VERSION=1.24.1
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm
fi
ort_node=$(npm root -g)/onnxruntime-node
if ! grep -q "\"version\": \"$ORT_NODE_VERSION\"" "$ort_node/package.json" 2>/dev/null; then
  ONNXRUNTIME_NODE_INSTALL=skip npm install -g --no-audit --no-fund --loglevel=error \
    "onnxruntime-node@$ORT_NODE_VERSION"
fi
