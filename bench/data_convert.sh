#!/bin/bash
# Usage: bench/data_convert.sh PARALLAXC [WORK_DIR] [GB]
#
# The conversion speed of `parallaxc data criteo` on one core, in bounded
# memory: px_gen_criteo (next to parallaxc in the build tree,
# build/tools/px_gen_criteo) writes GB gigabytes (default 10) of synthetic
# Criteo TSV; `wc -l` reads it once (the peer: the cost of reading the
# file); the converter turns it into a sharded dataset (26 tables of 10M
# rows, hashed categories), with one thread then with --threads 2 (the load
# average printed before each), timed by /usr/bin/time: wall time, user and
# system CPU time (the machine may be shared: the CPU times say what the
# conversion itself costs), peak RSS. Then the first GB, gzip -1
# compressed, converted from .gz. Prints MB/s of TSV by wall time, by user
# time and by user + system time, the ratio to the peer, and checks the
# peak RSS against 256 MiB. Needs about 2 x GB + 2 GB free in WORK_DIR
# (default: a mktemp -d under /work or /tmp), removed at the end if the bench
# passes (kept for diagnosis if it fails).
set -u
parallaxc=$(realpath "$1")
gen=$(dirname "$parallaxc")/../tools/px_gen_criteo
work=${2:-$(mktemp -d -p "$([ -d /work ] && echo /work || echo /tmp)")}
gb=${3:-10}
mkdir -p "$work"
# Removed when the bench passes; kept (and named) when it fails, for diagnosis.
passed=0
trap 'if [ $passed = 1 ]; then rm -rf "$work"; else
    echo "data_convert.sh failed: its work folder is kept for diagnosis: $work ($(du -sh "$work" 2>/dev/null |
        cut -f1)); remove it when done" >&2; fi' EXIT
df -h "$work" | tail -1
timed() { # LABEL COMMAND...: prints "LABEL wall user sys rss_kib"
    local label=$1
    shift
    /usr/bin/time -f "$label %e %U %S %M" -o "$work/time.$label" "$@" || exit 1
    cat "$work/time.$label"
}
timed generate "$gen" "$work/day.tsv" --bytes $((gb * 1000000000)) --seed 1
bytes=$(stat -c %s "$work/day.tsv")
sync
timed peer_wc wc -l "$work/day.tsv" >/dev/null
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
timed convert "$parallaxc" data criteo "$work/day.tsv" -o "$work/out" --table-rows 10000000
du -sb "$work/out" | awk '{ printf "dataset: %.2f GB\n", $1 / 1e9 }'
rm -rf "$work/out"
sync
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
timed convert_t2 "$parallaxc" data criteo "$work/day.tsv" -o "$work/out" --table-rows 10000000 \
    --threads 2
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$work/out"
head -c 1000000000 "$work/day.tsv" | head -n -1 >"$work/g1.tsv"
rm "$work/day.tsv"
gzip -1 "$work/g1.tsv"
gz_text=$(zcat "$work/g1.tsv.gz" | wc -c)
timed convert_gz "$parallaxc" data criteo "$work/g1.tsv.gz" -o "$work/outgz" --table-rows 10000000
/usr/bin/python3 - "$work" "$bytes" "$gz_text" <<'PY'
import sys
work, size, gz_text = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = {}
for name in ("generate", "peer_wc", "convert", "convert_t2", "convert_gz"):
    label, wall, user, sys_, rss = open("%s/time.%s" % (work, name)).read().split()
    t[name] = (float(wall), float(user), float(sys_), int(rss) * 1024)
def rates(name, n):
    wall, user, sys_, rss = t[name]
    return (n / 1e6 / wall, n / 1e6 / user if user else float("inf"),
            n / 1e6 / (user + sys_), rss)
w, u, us, rss = rates("convert", size)
print("TSV: %.2f GB, 1 thread" % (size / 1e9))
print("convert: %.1f s wall, %.1f s user, %.1f s system: %.0f MB/s wall, %.0f MB/s user, "
      "%.0f MB/s user+system; peak RSS %.0f MiB" % (t["convert"][0], t["convert"][1],
                                                    t["convert"][2], w, u, us, rss / 2**20))
w2, u2, us2, rss2 = rates("convert_t2", size)
print("convert --threads 2: %.1f s wall, %.1f s user, %.1f s system: %.0f MB/s wall "
      "(%.2f x one thread), %.0f MB/s user+system; peak RSS %.0f MiB"
      % (t["convert_t2"][0], t["convert_t2"][1], t["convert_t2"][2], w2, w2 / w, us2,
         rss2 / 2**20))
pw, pu, pus, _ = rates("peer_wc", size)
print("peer (wc -l): %.0f MB/s wall, %.0f MB/s user+system; convert / peer (wall): %.2f"
      % (pw, pus, w / pw))
gw, gu, gus, grss = rates("convert_gz", gz_text)
print("convert from .gz (gzip -1, %.2f GB of TSV): %.0f MB/s wall, %.0f MB/s user, "
      "%.0f MB/s user+system; peak RSS %.0f MiB" % (gz_text / 1e9, gw, gu, gus, grss / 2**20))
ok = us >= 150 and rss <= 256 * 2**20 and grss <= 256 * 2**20 and rss2 <= 256 * 2**20
print("target (>= 150 MB/s of TSV on one core by CPU time, <= 256 MiB RSS): %s"
      % ("met" if ok else "NOT met"))
sys.exit(0 if ok else 1)
PY
[ $? -eq 0 ] || exit 1
passed=1
