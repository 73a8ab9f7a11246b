#!/usr/bin/env bash
# Configures and builds Parallax into ./build (RelWithDebInfo). The compiler
# output goes to build/build.log; on failure its tail is shown. VERBOSE=1
# shows it all as it happens.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
echo "building Parallax in $BUILD_DIR ..."
if [ "${VERBOSE:-0}" = 1 ]; then
  cmake --build "$BUILD_DIR" -j"$(nproc)"
elif ! cmake --build "$BUILD_DIR" -j"$(nproc)" >"$BUILD_DIR/build.log" 2>&1; then
  tail -n 60 "$BUILD_DIR/build.log" >&2
  echo "error: the build failed (full log: $BUILD_DIR/build.log)" >&2
  exit 1
fi
