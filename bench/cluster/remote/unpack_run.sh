#!/bin/bash
# Runs the cluster benchmark from a bundle made by pack.sh, on a machine
# without the compiler. Run it as root from the repository's root there
# (bench/cluster/run.sh, bench.py and examples/ come from the checkout).
#
# usage: bench/cluster/remote/unpack_run.sh BUNDLE.tar.xz [RUN.SH ARGS] -- [BENCH ARGS]
#   e.g. ... bundle.tar.xz --hosts 4 -- --models lm1b_large --seconds 3 --repeat 3
#
# It unpacks into $PX_REMOTE_DIR (default /tmp/pxremote); copies into
# /usr/local/lib/pxremote only the libraries whose names the machine lacks
# (and runs ldconfig), into /usr/local/bin only the tools it lacks; puts the
# models where they were compiled against, with their tables regenerated
# (random, seed 1); and runs the bundled OpenMPI (relocated with
# OPAL_PREFIX, its own libraries first, the machine's OMPI_MCA_*/PMIX_MCA_*
# settings dropped) through an `mpirun` wrapper first in PATH. Python: the
# first python3 in PATH (it needs torch and numpy).
set -euo pipefail
if [ $# -lt 1 ] || [ ! -f "$1" ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 2
fi
bundle=$(realpath "$1")
shift
run_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do run_args+=("$1"); shift; done
[ $# -gt 0 ] && shift
B=${PX_REMOTE_DIR:-/tmp/pxremote}
rm -rf "$B" && mkdir -p "$B" && tar -C "$B" -xJf "$bundle"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "machine: $(nproc) CPUs, $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME")"
for v in OMP_NUM_THREADS OPENBLAS_NUM_THREADS; do
    [ -n "${!v:-}" ] && echo "note: $v=${!v} is set: it replaces the ranks' default thread count"
done

mkdir -p /usr/local/lib/pxremote
added=""
for l in "$B"/lib/*; do
    n=$(basename "$l")
    ldconfig -p | grep -q "^[[:space:]]*$n " || { cp "$l" /usr/local/lib/pxremote/; added="$added $n"; }
done
echo /usr/local/lib/pxremote >/etc/ld.so.conf.d/pxremote.conf
ldconfig
echo "libraries added:${added:- none}"
for b in ip tc unshare hostname; do command -v "$b" >/dev/null || cp "$B/bin/$b" /usr/local/bin/; done

mkdir -p "$B/mpi" "$B/root/usr/bin"
for b in orterun orted ompi_info; do cp "$B/bin/$b" "$B/mpi/"; cp "$B/bin/$b" "$B/root/usr/bin/"; done
cat >"$B/mpi/mpirun" <<EOW
#!/bin/sh
for v in \$(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p; s/^\(PMIX_MCA_[A-Za-z0-9_]*\)=.*/\1/p'); do unset \$v; done
export OPAL_PREFIX=$B/root/usr LD_LIBRARY_PATH=$B/lib PATH=$B/mpi:\$PATH
export OMPI_MCA_mca_base_param_files=$B/root/etc/openmpi/openmpi-mca-params.conf
export PMIX_MCA_pcompress_base_silence_warning=1 PMIX_MCA_mca_base_component_show_load_errors=0
exec $B/mpi/orterun "\$@"
EOW
chmod +x "$B/mpi/mpirun"
export PATH=$B/mpi:$PATH

dest=$(cat "$B/models/path")
mkdir -p "$dest"
models=()
for d in "$B"/models/*/; do
    m=$(basename "$d")
    rm -rf "${dest:?}/$m" && cp -r "$d" "$dest/$m" && models+=("$dest/$m")
done
python3 - "${models[@]}" <<'PY'
import os, sys
import numpy as np
for d in sys.argv[1:]:
    left = int(open(os.path.join(d, "weights.size")).read()) // 4
    rng = np.random.default_rng(1)
    with open(os.path.join(d, "model.onnx.data"), "wb") as f:
        while left:
            k = min(left, 1 << 22)
            f.write((rng.standard_normal(k, dtype=np.float32) * np.float32(0.05)).tobytes())
            left -= k
PY
export PX_PYTHON=$(command -v python3) PX_BENCH_CACHE=$dest
exec bash bench/cluster/run.sh "${run_args[@]}" -- - --prebuilt "$B/progs" "$@"
