#!/bin/bash
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS [HARNESS[:SECONDS]...]
#
# Builds the libFuzzer harnesses (tests/fuzz/build.sh, clang-14, into
# BUILD_DIR/fuzz), replays every kept regression input
# (tests/fuzz/regressions/HARNESS/*), then fuzzes each harness (import, data,
# weights, manifest: a sharded dataset's, checkpoint: a checkpoint's
# manifest, checkpoint_piece: a piece, bag_offsets: EmbeddingBag offsets,
# flags_agree: two ranks' command lines compared; default all)
# for SECONDS (HARNESS:SECONDS: its own) from the seed corpus
# (tests/fuzz/seeds/HARNESS, with tests/fuzz/dicts/HARNESS.dict if there
# is one), one process
# at a time at nice 19. Prints the executions per harness and in total;
# fails on any crash, leak (import, data, weights and manifest), timeout or
# out-of-memory, printing the input to keep.
#
# ctest runs it for 20 s per file reader and 5 s for the small harnesses
# (fuzz_smoke). Longer runs:
#   nice -n 19 bash tests/fuzz/run.sh build 3600 import
#   PX_FUZZ_CORPUS=/var/tmp/pxfuzz ...   keeps (and reuses) the grown corpus
# A crash leaves BUILD_DIR/fuzz/artifacts/HARNESS-crash-*: fix the cause and
# copy the file to tests/fuzz/regressions/HARNESS/ so every run replays it.
set -uo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 BUILD_DIR SECONDS [import|data|weights|manifest|checkpoint|checkpoint_piece|bag_offsets|flags_agree[:SECONDS]]..." >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
build=$1
seconds=$2
shift 2
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] ||
    harnesses=(import data weights manifest checkpoint checkpoint_piece bag_offsets flags_agree)
out=$build/fuzz
nice -n 19 bash "$here/build.sh" "$out" || exit 1
mkdir -p "$out/artifacts"

total=0
failed=0
for spec in "${harnesses[@]}"; do
    h=${spec%%:*}
    secs=$seconds
    [ "$spec" = "$h" ] || secs=${spec#*:}
    bin=$out/fuzz_$h
    if [ ! -x "$bin" ]; then
        echo "FAIL $h: no harness $bin"
        failed=$((failed + 1))
        continue
    fi
    env=()
    # The checkpoint reader ends bad files with px_rt_fail, which the harness
    # turns into a longjmp: what it drops there (its own allocations are
    # freed by ckpt_alloc.c; a FILE libc allocated is not) is not a leak to
    # report: the real program exits at that point.
    [ "${h%_piece}" = checkpoint ] && env=(ASAN_OPTIONS=detect_leaks=0)
    opts=(-rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=20 -print_final_stats=1
        "-artifact_prefix=$out/artifacts/$h-")
    # a harness's dictionary (words the fuzzer would be slow to guess: flag names)
    [ -f "$here/dicts/$h.dict" ] && opts+=("-dict=$here/dicts/$h.dict")
    regressions=("$here/regressions/$h"/*)
    if [ -e "${regressions[0]}" ]; then
        if env "${env[@]}" nice -n 19 "$bin" "${opts[@]}" "${regressions[@]}" >"$out/$h.replay.log" 2>&1; then
            echo "ok   $h: ${#regressions[@]} regression inputs replayed"
        else
            echo "FAIL $h: a regression input fails again:"
            grep -E "ERROR|SUMMARY|Running:" "$out/$h.replay.log" | tail -n 5
            failed=$((failed + 1))
            continue
        fi
    fi
    if [ -n "${PX_FUZZ_CORPUS:-}" ]; then
        corpus=$PX_FUZZ_CORPUS/$h
    else
        corpus=$(mktemp -d)
    fi
    mkdir -p "$corpus"
    env "${env[@]}" nice -n 19 "$bin" "${opts[@]}" -max_total_time="$secs" \
        "$corpus" "$here/seeds/$h" >"$out/$h.log" 2>&1
    rc=$?
    [ -n "${PX_FUZZ_CORPUS:-}" ] || rm -rf "$corpus"
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$h.log" | tail -n 1)
    runs=${runs:-0}
    total=$((total + runs))
    if [ $rc -eq 0 ] && ! grep -q "^==[0-9]*==ERROR\|^SUMMARY: " "$out/$h.log"; then
        echo "ok   $h: $runs executions in $secs s, no crash"
    else
        echo "FAIL $h (exit $rc) after $runs executions:"
        grep -E "ERROR|SUMMARY|Test unit written" "$out/$h.log" | tail -n 6
        failed=$((failed + 1))
    fi
done
echo "fuzzing: $total executions in all, $failed failed"
[ $failed -eq 0 ]
