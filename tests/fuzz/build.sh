#!/bin/bash
# Usage: tests/fuzz/build.sh OUT_DIR
#
# Builds the libFuzzer harnesses with clang-14 (-fsanitize=fuzzer,address,
# undefined), apart from the gcc build: the library sources they need are
# compiled here, once, into OUT_DIR/obj (rebuilt only when a source or header
# is newer), and the ONNX protobuf-c bindings are generated into OUT_DIR/pb.
#   OUT_DIR/fuzz_import      ONNX importer + compile pipeline up to saving ONNX
#   OUT_DIR/fuzz_data        .npy and .pb data loaders
#   OUT_DIR/fuzz_weights     a program's weight reader (onnx_wire.c, weights_source.c)
#   OUT_DIR/fuzz_manifest    a sharded dataset's manifest (dataset_manifest.c)
#   OUT_DIR/fuzz_checkpoint  the --resume checkpoint reader on a fuzzed manifest
#   OUT_DIR/fuzz_checkpoint_piece  ... on a fuzzed piece (with a valid manifest)
#   OUT_DIR/fuzz_bag_offsets EmbeddingBag offsets: the loaders' check (bag_offsets.c)
#                            against PyTorch's rule, and the SegmentReduce kernel
#   OUT_DIR/fuzz_flags_agree two ranks' command lines compared (flags_agree.c)
# The checkpoint harnesses embed the real checkpoint tests/fuzz/ckpt_base
# (its manifest `ck` and its one piece `ck.<nonce>.0`) as OUT_DIR/ckpt_base.inc;
# tests/fuzz/ckpt_base/README says how it was made.
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: $0 OUT_DIR" >&2
    exit 2
fi
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
cc=${PX_FUZZ_CC:-clang-14}
proto=${PX_ONNX_PROTO:-/usr/include/onnx/onnx.proto}
command -v "$cc" >/dev/null || {
    echo "fuzz build: $cc not found (apt-get install clang-14 libclang-rt-14-dev)" >&2
    exit 1
}
mkdir -p "$out/obj" "$out/pb"
if [ ! -f "$out/pb/onnx.pb-c.c" ] || [ "$proto" -nt "$out/pb/onnx.pb-c.c" ]; then
    protoc-c --proto_path="$(dirname "$proto")" --c_out="$out/pb" "$proto"
fi

# ckpt_base.inc: the base checkpoint's bytes, rewritten only when they change.
base=$src/tests/fuzz/ckpt_base
pieces=("$base"/ck.*.0)
if [ ! -f "$base/ck" ] || [ ${#pieces[@]} -ne 1 ] || [ ! -f "${pieces[0]}" ]; then
    echo "fuzz build: $base must hold one checkpoint: ck and ck.<nonce>.0" >&2
    exit 1
fi
{
    echo "static const char base_piece_name[] = \"$(basename "${pieces[0]}")\";"
    echo "static const unsigned char base_manifest[] = {"
    xxd -i <"$base/ck"
    echo "};"
    echo "static const unsigned char base_piece[] = {"
    xxd -i <"${pieces[0]}"
    echo "};"
} >"$out/ckpt_base.inc.new"
if cmp -s "$out/ckpt_base.inc.new" "$out/ckpt_base.inc"; then
    rm "$out/ckpt_base.inc.new"
else
    mv "$out/ckpt_base.inc.new" "$out/ckpt_base.inc"
fi

cflags=(-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
    -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
    -I"$src/ir" -I"$src/common" -I"$src/passes" -I"$src/runtime" -I"$src/runtime/program" -I"$out/pb" -I"$src/tests/fuzz" -I"$out")
# Every header of the sources: a changed header rebuilds everything (simple, rare).
# sed, not head: head exits after one line, and with pipefail an ls whose
# list takes two writes (over 4 KiB: a longer checkout path) dies of SIGPIPE
# and ends this script silently.
newest_header=$(ls -t "$src"/ir/*.h "$src"/common/*.h "$src"/ir/ops.def "$src"/passes/*.h "$src"/runtime/*.h \
    "$src"/runtime/program/*.h "$src"/runtime/optim/*.h "$src"/runtime/kernels/thread_pool.h "$src"/tests/fuzz/*.h "$out/ckpt_base.inc" |
    sed -n 1p)

# obj SOURCE...: compiles each source into obj/ (2 jobs at a time); prints the objects.
obj() {
    local objs=() s o
    local -a todo=()
    for s in "$@"; do
        o="$out/obj/$(echo "${s#"$src"/}" | tr '/' '_').o"
        objs+=("$o")
        if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ "$newest_header" -nt "$o" ]; then
            todo+=("$s" "$o")
        fi
    done
    local i=0 pids=()
    while [ $i -lt ${#todo[@]} ]; do
        "$cc" "${cflags[@]}" -c "${todo[$i]}" -o "${todo[$((i + 1))]}" >&2 &
        pids+=($!)
        if [ ${#pids[@]} -ge 2 ]; then
            wait "${pids[0]}" || exit 1
            pids=("${pids[@]:1}")
        fi
        i=$((i + 2))
    done
    for p in "${pids[@]}"; do wait "$p" || exit 1; done
    printf '%s\n' "${objs[@]}"
}

mapfile -t import_objs < <(obj "$src"/ir/*.c "$src"/common/*.c "$src"/passes/*.c "$out/pb/onnx.pb-c.c" \
    "$src/tests/fuzz/fuzz_import.c")
prog=$src/runtime/program
common_srcs=("$src"/common/*.c)
loader_srcs=("$prog/npy.c" "$prog/npy_header.c" "$prog/tensor_pb.c" "${common_srcs[@]}" "$prog/checksum.c"
    "$prog/hash64.c" "$src/runtime/rt_fail.c")
mapfile -t data_objs < <(obj "${loader_srcs[@]}" "$src/tests/fuzz/fuzz_data.c")
mapfile -t manifest_objs < <(obj "$prog/dataset_manifest.c" "$prog/npy_header.c" "$prog/hash64.c" \
    "${common_srcs[@]}" "$src/tests/fuzz/fuzz_manifest.c")
mapfile -t weights_objs < <(obj "$prog/onnx_wire.c" "$prog/weights_source.c" "$prog/hash64.c" \
    "${common_srcs[@]}" "$src/tests/fuzz/fuzz_weights.c")
mapfile -t ckpt_objs < <(obj "${loader_srcs[@]}" "$prog/checkpoint.c" "$prog/checkpoint_read.c" \
    "$prog/ckpt_layout.c" "$prog/tp_slabs.c" "$prog/pb_write.c" "$prog/data.c" "$prog/data_order.c" \
    "$prog/dataset_manifest.c" "$prog/bag_offsets.c" \
    "$src/runtime/optim/optim.c" "$src/runtime/optim/clip.c" "$src/runtime/optim/train_ctx.c" \
    "$src/runtime/kernels/thread_pool.c" \
    "$src/tests/fuzz/ckpt_stubs.c" \
    "$src/tests/fuzz/ckpt_alloc.c" "$src/tests/fuzz/ckpt_harness.c")
mapfile -t bag_objs < <(obj "$prog/bag_offsets.c" "$src/runtime/kernels/embedding_bag.c" \
    "$src/runtime/rt_fail.c" "$src/tests/fuzz/fuzz_bag_offsets.c")
mapfile -t flags_objs < <(obj "${loader_srcs[@]}" "$prog/train_flags.c" "$prog/flags_agree.c" \
    "$prog/lr_schedule.c" "$prog/run_dir.c" "$prog/eval_metrics.c" "$prog/data.c" \
    "$prog/data_order.c" "$prog/dataset_manifest.c" "$prog/bag_offsets.c" "$prog/sync_mode.c" \
    "$src/tests/fuzz/fuzz_flags_agree.c")
mapfile -t ckpt_main < <(obj "$src/tests/fuzz/fuzz_checkpoint.c" "$src/tests/fuzz/fuzz_checkpoint_piece.c")

link=(-fsanitize=fuzzer,address,undefined -pthread)
"$cc" "${link[@]}" "${import_objs[@]}" -lprotobuf-c -lm -o "$out/fuzz_import"
"$cc" "${link[@]}" "${data_objs[@]}" -lm -o "$out/fuzz_data"
"$cc" "${link[@]}" "${weights_objs[@]}" -lm -o "$out/fuzz_weights"
"$cc" "${link[@]}" "${manifest_objs[@]}" -lm -o "$out/fuzz_manifest"
"$cc" "${link[@]}" "${bag_objs[@]}" -lm -o "$out/fuzz_bag_offsets"
"$cc" "${link[@]}" "${flags_objs[@]}" -lm -o "$out/fuzz_flags_agree"
"$cc" "${link[@]}" "${ckpt_objs[@]}" "${ckpt_main[0]}" -lm -o "$out/fuzz_checkpoint" \
    -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free
"$cc" "${link[@]}" "${ckpt_objs[@]}" "${ckpt_main[1]}" -lm -o "$out/fuzz_checkpoint_piece" \
    -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free
echo "fuzz build: $out/fuzz_import $out/fuzz_data $out/fuzz_weights $out/fuzz_manifest $out/fuzz_checkpoint $out/fuzz_checkpoint_piece $out/fuzz_bag_offsets $out/fuzz_flags_agree"
