#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (Criterion unit
# tests, CLI tests, sanitizer build of the importer). Exits non-zero on any
# failure, and also when no test ran at all.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}
cd "$BUILD_DIR"
ntests=$(ctest -N | sed -n 's/^Total Tests: //p')
if [ "${ntests:-0}" -eq 0 ]; then
  echo "error: ctest found no tests" >&2
  exit 1
fi
ctest --output-on-failure -j"$(nproc)"
