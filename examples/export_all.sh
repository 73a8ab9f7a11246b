#!/bin/bash
# Re-export every example model, its data/ and reference.json (deterministic).
# Needs Debian's torch and onnx, hence /usr/bin/python3.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for model in mlp cnn lstm_lm transformer_lm recommender lm1b dlrm; do
    /usr/bin/python3 -W ignore "$here/$model/export.py"
done
