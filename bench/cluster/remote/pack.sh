#!/bin/bash
# Packs the cluster benchmark for a machine without the compiler (the
# 16-core device machine had no LLVM 19 and an OpenMPI that refused the
# hostfile): bench/cluster/remote/unpack_run.sh runs it there.
#
# usage: bench/cluster/remote/pack.sh PARALLAXC OUT.tar.xz [MODELS] [HOSTS]
#        (MODELS: comma-separated generated models, default
#        lm1b_large,recommender_large; HOSTS: for the inspect reports, default 4)
#
# What goes in (about 16 MB for the default models):
#   - every model as a graph whose float tables of 1 MiB or more are
#     external data, at $PX_REMOTE_MODELS (default /tmp/pxdev) on both
#     machines: the tables themselves stay behind and are regenerated there
#     as random values of the same size (throughput does not depend on them);
#   - the programs of every mode and the inspect reports (bench.py --prebuild);
#   - this machine's OpenMPI tree, orterun and orted, PMIx, the libraries
#     the programs and OpenMPI load (not glibc or libstdc++), ip, tc,
#     unshare and hostname.
set -euo pipefail
if [ $# -lt 2 ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 2
fi
parallaxc=$(realpath "$1")
out=$(realpath -m "$2")
models=${3:-lm1b_large,recommender_large}
hosts=${4:-4}
root=$(cd "$(dirname "$0")/../../.." && pwd)
dest=${PX_REMOTE_MODELS:-/tmp/pxdev}
stage=$(mktemp -d /tmp/pxpack.XXXXXX)
trap 'rm -rf "$stage"' EXIT
py=/usr/bin/python3
multi=/usr/lib/x86_64-linux-gnu

# The models: generated where bench.py generates them, then rewritten to $dest.
"$py" - "$root/bench" "$dest" "$models" <<'PY'
import os, shutil, sys
sys.path.insert(0, sys.argv[1])
import distributed as d
import onnx
from onnx import external_data_helper as ext
dest = sys.argv[2]
for model in sys.argv[3].split(","):
    src, out = d.generated_model_dir(model), os.path.join(dest, model)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for f in ("data", "export.sha256", "reference.json"):
        p = os.path.join(src, f)
        (shutil.copytree if os.path.isdir(p) else shutil.copy)(p, os.path.join(out, f))
    m = onnx.load(os.path.join(src, "model.onnx"))
    for t in m.graph.initializer:
        if t.data_type == onnx.TensorProto.FLOAT and len(t.raw_data) >= 1 << 20:
            ext.set_external_data(t, location="model.onnx.data")
    onnx.save_model(m, os.path.join(out, "model.onnx"))
    size = os.path.getsize(os.path.join(out, "model.onnx.data"))
    open(os.path.join(out, "weights.size"), "w").write("%d\n" % size)
    print("model %s: graph %d bytes, tables %d bytes (regenerated there)"
          % (model, os.path.getsize(os.path.join(out, "model.onnx")), size))
PY
PX_BENCH_CACHE=$dest "$py" "$root/bench/cluster/bench.py" "$parallaxc" --prebuild "$stage/progs" \
    --models "$models" --hosts "$hosts"
mkdir -p "$stage/models"
for m in ${models//,/ }; do
    mkdir -p "$stage/models/$m"
    (cd "$dest/$m" && cp -r data export.sha256 reference.json model.onnx weights.size "$stage/models/$m/")
done
echo "$dest" >"$stage/models/path"

# OpenMPI, PMIx and what they and the programs load.
mkdir -p "$stage/root" "$stage/lib" "$stage/bin"
tar -C / -cf - "${multi#/}/openmpi" "${multi#/}/pmix2" usr/share/openmpi etc/openmpi | tar -C "$stage/root" -xf -
cp -L /usr/bin/orterun /usr/bin/orted /usr/bin/ompi_info "$(command -v ip)" "$(command -v tc)" \
    "$(command -v unshare)" "$(command -v hostname)" "$stage/bin/"
{
    find "$multi/openmpi" "$multi/pmix2" -name '*.so*' -type f
    ls "$stage"/bin/* "$stage"/progs/*-hybrid
} | while read -r e; do ldd "$e" 2>/dev/null | awk '/=>/ && $3 ~ /^\// {print $3}'; done | sort -u |
    while read -r l; do
        case $(basename "$l") in
        libc.so* | libm.so* | libpthread* | libdl.so* | librt.so* | ld-linux* | libstdc++* | libgcc_s* | libresolv*) ;;
        *) case $l in "$multi"/openmpi/* | "$multi"/pmix2/*) ;; *) cp -L "$l" "$stage/lib/" ;; esac ;;
        esac
    done
cp "$root/bench/cluster/remote/unpack_run.sh" "$stage/"
tar -C "$stage" -cJf "$out" .
echo "packed $(du -h "$out" | cut -f1) into $out"
