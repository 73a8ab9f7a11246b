#!/usr/bin/env bash
# Builds the importer tests with AddressSanitizer + UBSan in
# <srcdir>/build-asan and runs them: hostile ONNX input must never touch
# memory it should not. Usage: asan_import.sh <parallaxc> <srcdir>
set -euo pipefail
src="${2:?usage: asan_import.sh <parallaxc> <srcdir>}"
build="$src/build-asan"
tests=(test_onnx_import test_bad_input test_testdata_walk test_onnx_wire test_hostile_import)

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DPX_SANITIZE=ON >/dev/null
cmake --build "$build" -j1 --target "${tests[@]}"

# Criterion forks each test; ASan/UBSan abort the child, which fails the test.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
failed=0
for t in "${tests[@]}"; do
    echo "== $t (ASan/UBSan)"
    if ! "$build/tests/$t" --jobs=1; then
        echo "FAILED: $t under sanitizers" >&2
        failed=1
    fi
done
exit "$failed"
