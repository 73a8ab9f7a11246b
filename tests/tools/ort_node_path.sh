#!/bin/bash
# Usage: ort_node_path.sh
# Prints the folder to put in NODE_PATH for ONNX Runtime for Node.js
# (onnxruntime-node, installed globally by scripts/install-deps.sh), after
# checking that node loads it. Exits 1 with the reason when node, npm or the
# package is missing: a test that needs it fails rather than skips.
set -u
command -v node >/dev/null && command -v npm >/dev/null ||
    { echo "node and npm are not installed: run scripts/install-deps.sh" >&2; exit 1; }
root=$(npm root -g) || { echo "npm root -g failed" >&2; exit 1; }
[ -f "$root/onnxruntime-node/package.json" ] ||
    { echo "onnxruntime-node is not in $root: run scripts/install-deps.sh" >&2; exit 1; }
if ! err=$(NODE_PATH=$root node -e "require('onnxruntime-node')" 2>&1); then
    echo "onnxruntime-node in $root does not load: $(tail -c 600 <<<"$err")" >&2
    exit 1
fi
echo "$root"
