#!/bin/bash
# Programs by turns on the simulated cluster: an A/B comparison in which
# drift on the machine hits every configuration alike.
#
# usage (as root): echo 'bench/cluster/ab.sh CONFIGS [REPEATS] [STEPS]' |
#                      SHELL=/bin/bash bench/cluster/run.sh --hosts 4 --shell
#
# CONFIGS has one configuration per line: "DATA_DIR PROGRAM [FLAGS...]"
# (compiled training programs, e.g. of two commits; # starts a comment).
# Each repeat runs every configuration once, in order, with mpirun across
# the cluster's hosts (the flags bench.py uses), STEPS steps (default 50)
# of which 15 warm up, and prints samples/s, the rank-0
# comm_hidden_fraction, the communication thread's share of the ranks' CPU
# time (mean over ranks) and the machine's CPU time split (/proc/stat).
set -euo pipefail
configs=${1:?usage: ab.sh CONFIGS [REPEATS] [STEPS]}
repeats=${2:-3}
steps=${3:-50}
: "${PX_CLUSTER_HOSTFILE:?run inside bench/cluster/run.sh --shell}"
work=$(mktemp -d /tmp/pxab.XXXXXX)
trap 'rm -rf "$work"' EXIT
stats=$work/stats.json
# bench.py's own mpirun command line, on every host of the cluster
mapfile -t mpi < <(/usr/bin/python3 - "$(dirname "$0")" "$work" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import bench
cl = bench.cluster()
print("\n".join(bench.mpirun_cmd(cl, cl["n"], sys.argv[2])))
PY
)
[ ${#mpi[@]} -gt 0 ] || { echo "ab.sh: no mpirun command from bench.py" >&2; exit 1; }
cpu() { head -1 /proc/stat; }
for ((rep = 1; rep <= repeats; rep++)); do
    while read -r data prog flags; do
        [ -z "$data" ] || [ "${data:0:1}" = "#" ] && continue
        before=$(cpu)
        # shellcheck disable=SC2086 # flags are words
        if ! "${mpi[@]}" "$prog" --data "$data" --steps "$steps" --warmup-steps 15 \
            --log-every 0 --stats "$stats" $flags >/dev/null 2>&1 </dev/null; then
            echo "FAILED: $prog $flags" >&2
            continue
        fi
        after=$(cpu)
        /usr/bin/python3 - "$stats" "$before" "$after" "$prog $flags" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
a = [int(x) for x in sys.argv[2].split()[1:8]]
b = [int(x) for x in sys.argv[3].split()[1:8]]
d = [y - x for x, y in zip(a, b)]
tot = sum(d) or 1
hid = s["ranks"][0]["comm_hidden_fraction"]
cpu = [r.get("cpu_seconds_per_step") for r in s["ranks"]]
share = [c["comm_thread"] / c["process"] for c in cpu if c and c["process"] > 0]
print("%-60s %9.0f samples/s  hidden %4s  comm CPU %4s  user %3.0f%% sys %3.0f%% idle %3.0f%%" % (
    sys.argv[4][:60], s["samples_per_second"], "-" if hid is None else "%.2f" % hid,
    "%.2f" % (sum(share) / len(share)) if share else "-",
    100 * (d[0] + d[1]) / tot, 100 * d[2] / tot, 100 * d[3] / tot))
PY
    done <"$configs"
done
