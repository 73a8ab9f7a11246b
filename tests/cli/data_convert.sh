#!/bin/bash
# Usage: data_convert.sh PARALLAXC SRCDIR
# `parallaxc data` converters against NumPy references written here:
# - criteo: values (log(x+1) in float32, categories by hash and by modulo,
#   missing values, negative counts, upper-case hex), .gz input giving the
#   same dataset, --split by fraction (each line's split from the hash of
#   its number) and by file, --index-dtype int32;
# - bad input: a 38-field line, a non-hex category (file and line named,
#   exit 1, nothing left behind), --max-bad-lines skipping and counting, a
#   conversion killed half-way (SIGXFSZ) that the runtime refuses and a
#   rerun restarts, a finished dataset not replaced without --overwrite;
# - bounded memory: the same peak RSS at 4 times the input, a line over
#   the 16 MiB limit refused;
# - csv: a schema with hashN, skip, --header and --delimiter, a bad number;
# - tokens: the vocabulary and the windows.
# - --threads N: the same datasets, bad-line messages and stops as one
#   thread, bounded memory; bad values refused.
. "$(dirname "$0")/lib.sh" "$@"
cd "$tmp" || exit 1
refs=$tmp/refs.py
cat >"$refs" <<'PY'
import os, sys
import numpy as np
MASK = (1 << 64) - 1
def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & MASK
def hash_u64(h, v):  # runtime/program/hash64.c: px_hash64_u64
    h ^= (v * 0x9E3779B97F4A7C15) & MASK
    return (rotl(h, 27) * 0xFF51AFD7ED558CCD + 0x52DCE729) & MASK
def hash_bytes(h, data):  # px_hash64
    n = len(data)
    for i in range(0, n - n % 8, 8):
        h = hash_u64(h, int.from_bytes(data[i:i + 8], "little"))
    tail = int.from_bytes(data[n - n % 8:] + b"\0" * 8, "little") & MASK if n % 8 else 0
    return hash_u64(hash_u64(h, tail), n)
INIT = 0x6A09E667F3BCC909
def load(folder):
    """A sharded dataset's inputs, shards concatenated in manifest order."""
    shards, names = [], []
    for line in open(os.path.join(folder, "manifest.txt")):
        w = line.split()
        if w[0] == "input":
            names.append(w[1])
        if w[0] == "shard":
            shards.append(w[1])
    return {n: np.concatenate([np.load(os.path.join(folder, s, n + ".npy")) for s in shards])
            for n in names}
PY

# 300 lines: missing fields, negative counts, upper- and lower-case hex.
"$py" - <<'PY' || exit 1
import random
random.seed(4)
with open("a.tsv", "w") as f:
    for i in range(300):
        ints = ["" if random.random() < 0.2 else str(random.choice([-3, 0, 1, 7, 4095, 4096, 123456]))
                for _ in range(13)]
        cats = ["" if random.random() < 0.15 else ("%08x" % random.getrandbits(32)).upper()
                if random.random() < 0.3 else "%x" % random.getrandbits(random.choice([4, 32, 64]))
                for _ in range(26)]
        f.write("\t".join([str(random.randint(0, 1))] + ints + cats) + "\n")
PY
rows=$(seq -s, 11 36)
check "criteo: hash" "$parallaxc" data criteo a.tsv -o hash --table-rows "$rows" --shard-rows 64 \
    --block-rows 16 --quiet
check "criteo: mod, int32" "$parallaxc" data criteo a.tsv -o mod --table-rows "$rows" \
    --categories mod --index-dtype int32 --quiet
check "criteo: values against the reference" "$py" - <<PY
import sys
sys.path.insert(0, "$tmp")
from refs import *
rows = list(range(11, 37))
want = {"label": [], "dense": [], "hash": [], "mod": []}
for line in open("a.tsv"):
    f = line.rstrip("\n").split("\t")
    want["label"].append(float(f[0]))
    x = np.array([max(int(v), 0) if v else 0 for v in f[1:14]], np.float32)
    want["dense"].append(np.log(x + np.float32(1)))
    cats = [int(v, 16) if v else None for v in f[14:]]
    want["mod"].append([(c or 0) % r for c, r in zip(cats, rows)])
    want["hash"].append([0 if c is None else 1 + ((hash_u64(INIT + k, c) * (r - 1)) >> 64)
                         for k, (c, r) in enumerate(zip(cats, rows))])
h, m = load("hash"), load("mod")
assert np.array_equal(h["label"], np.array(want["label"], np.float32))
assert np.allclose(h["dense"], np.array(want["dense"]), rtol=2e-7, atol=0), "dense"
for k in range(26):
    assert h["cat_%d" % k].dtype == np.int64 and m["cat_%d" % k].dtype == np.int32
    assert np.array_equal(h["cat_%d" % k], np.array(want["hash"])[:, k]), "hash %d" % k
    assert np.array_equal(m["cat_%d" % k], np.array(want["mod"])[:, k]), "mod %d" % k
PY
gzip -c a.tsv >a.tsv.gz
check "criteo: .gz input" "$parallaxc" data criteo a.tsv.gz -o gz --table-rows "$rows" \
    --shard-rows 64 --block-rows 16 --quiet
check "criteo: .gz gives the same dataset" cmp hash/manifest.txt gz/manifest.txt

check "criteo: --split by fraction" "$parallaxc" data criteo a.tsv -o split --table-rows 1000 \
    --split train=0.7,eval=0.3 --quiet
check "criteo: each line in its split" "$py" - <<PY
import sys
sys.path.insert(0, "$tmp")
from refs import *
labels = [float(l.split("\t")[0]) for l in open("a.tsv")]
u = [(hash_u64(0x5EED5EED5EED5EED, n) >> 11) / 2.0**53 for n in range(1, 301)]
for name, keep in (("train", [x < 0.7 for x in u]), ("eval", [x >= 0.7 for x in u])):
    got = load("split/" + name)["label"]
    assert np.array_equal(got, np.array([l for l, k in zip(labels, keep) if k], np.float32)), name
PY
head -100 a.tsv >day0.tsv
tail -200 a.tsv >day1.tsv
check "criteo: --split by file" "$parallaxc" data criteo day0.tsv day1.tsv -o days \
    --table-rows 1000 --split train=day1.tsv,eval=day0.tsv --quiet
check "criteo: by file, counts" grep -q "^samples 200$" days/train/manifest.txt
# --threads N: the same datasets, file by file and split by split.
check "criteo: --threads 2, by file" "$parallaxc" data criteo day0.tsv day1.tsv -o days2 \
    --table-rows 1000 --split train=day1.tsv,eval=day0.tsv --quiet --threads 2
check "criteo: --threads 3, by fraction" "$parallaxc" data criteo a.tsv -o split3 \
    --table-rows 1000 --split train=0.7,eval=0.3 --quiet --threads 3
check "--threads: the same datasets" bash -c "cmp days/train/manifest.txt days2/train/manifest.txt &&
    cmp days/eval/manifest.txt days2/eval/manifest.txt &&
    cmp split/train/manifest.txt split3/train/manifest.txt &&
    cmp split/eval/manifest.txt split3/eval/manifest.txt"

# Bad lines: the file and line named, exit 1, nothing left.
bad_case() { # LABEL PATTERN LINE
    head -6 a.tsv >bad.tsv
    printf '%s\n' "$3" >>bad.tsv
    head -3 a.tsv >>bad.tsv
    rm -rf bad
    "$parallaxc" data criteo bad.tsv -o bad --table-rows 100 --quiet >out.log 2>&1
    local rc=$?
    if [ $rc -eq 1 ] && grep -q "bad.tsv:7: $2" out.log && [ -z "$(ls -A bad 2>/dev/null)" ]; then
        pass "$1: refused (bad.tsv:7), nothing left"
    else
        fail "$1: status $rc, left: $(ls -A bad 2>/dev/null), message: $(head -c 300 out.log)"
    fi
}
bad_case "a 38-field line" "38 fields, expected 40" "$(head -1 a.tsv | cut -f1-38)"
bad_case "a non-hex category" "categorical feature 3 is not hexadecimal" \
    "$(head -1 a.tsv | awk -F'\t' 'BEGIN { OFS = "\t" } { $17 = "12g4"; print }')"
bad_case "a non-integer count" "integer feature 2 is not an integer" \
    "$(head -1 a.tsv | awk -F'\t' 'BEGIN { OFS = "\t" } { $3 = "1.5"; print }')"
bad_case "a 17-digit category" "categorical feature 1 is longer than 64 bits" \
    "$(head -1 a.tsv | awk -F'\t' 'BEGIN { OFS = "\t" } { $15 = "1234567890abcdef0"; print }')"
{
    head -50 a.tsv
    echo "1	2	3"
    head -1 a.tsv | awk -F'\t' 'BEGIN { OFS = "\t" } { $1 = "2"; print }'
    tail -50 a.tsv
} >skip.tsv
check "--max-bad-lines 2: skipped and counted" bash -c "'$parallaxc' data criteo skip.tsv -o skip \
    --table-rows 100 --max-bad-lines 2 >out 2>err && grep -q 'skip.tsv:51: 3 fields' err &&
    grep -q 'skip.tsv:52: the label is not 0 or 1' err && grep -q '2 bad lines skipped' out &&
    grep -q '^samples 100$' skip/manifest.txt"
for threads in 1 2; do
    if "$parallaxc" data criteo skip.tsv -o skip1 --table-rows 100 --max-bad-lines 1 \
        --threads $threads >out.log 2>&1; then
        fail "--max-bad-lines 1 with 2 bad lines, --threads $threads: accepted"
    else
        check "--max-bad-lines 1 with 2 bad lines, --threads $threads: stopped at the second" \
            bash -c "grep -q 'skip.tsv:52: .*bad line 2; --max-bad-lines 1' out.log &&
                [ -z \"\$(ls -A skip1 2>/dev/null)\" ]"
    fi
done
check "--max-bad-lines 2, --threads 2: the same messages and dataset" bash -c "'$parallaxc' data \
    criteo skip.tsv -o skip2 --table-rows 100 --max-bad-lines 2 --threads 2 >out2 2>err2 &&
    cmp err err2 && cmp skip/manifest.txt skip2/manifest.txt"
for bad in 0 33 x; do
    if "$parallaxc" data criteo a.tsv -o t$bad --table-rows 100 --threads $bad >out.log 2>&1; then
        fail "--threads $bad: accepted"
    else
        check "--threads $bad: refused" grep -q "threads needs a whole number from 1 to 32" out.log
    fi
done

# Killed half-way (SIGXFSZ at 8 KiB per file): refused by the runtime,
# started over by the next run, which then equals a clean conversion.
{ # (the shell's own "File size limit exceeded" goes to /dev/null)
    (
        ulimit -f 8
        exec "$parallaxc" data criteo a.tsv -o killed --table-rows "$rows" --shard-rows 200 \
            --block-rows 16 --quiet
    ) >out.log 2>&1
} 2>/dev/null
rc=$?
if [ $rc -gt 128 ] && [ -e killed/.parallax-convert ] && [ ! -e killed/manifest.txt ]; then
    pass "killed half-way (status $rc): unfinished, no manifest"
else
    fail "killed half-way: status $rc, $(ls -A killed)"
fi
check "compile a program" "$parallaxc" compile "$src/examples/recommender/model.onnx" -o prog \
    --batch 4
if ./prog --data killed --steps 1 >out.log 2>&1; then
    fail "the runtime reads an unfinished conversion"
else
    check "the runtime refuses an unfinished conversion" grep -q "unfinished conversion" out.log
fi
check "the killed conversion started over" bash -c "'$parallaxc' data criteo a.tsv -o killed \
    --table-rows '$rows' --shard-rows 200 --block-rows 16 2>err >/dev/null &&
    grep -q 'unfinished conversion: starting it over' err && [ ! -e killed/.parallax-convert ]"
check "criteo: clean conversion at 200 rows" "$parallaxc" data criteo a.tsv -o clean \
    --table-rows "$rows" --shard-rows 200 --block-rows 16 --quiet
check "the restarted conversion equals a clean one" cmp clean/manifest.txt killed/manifest.txt
if "$parallaxc" data criteo a.tsv -o clean --table-rows 7 --quiet >out.log 2>&1; then
    fail "a finished dataset replaced without --overwrite"
else
    check "a finished dataset is kept without --overwrite" bash -c "grep -q 'give --overwrite' out.log &&
        cmp clean/manifest.txt killed/manifest.txt"
fi
check "--overwrite replaces it" bash -c "'$parallaxc' data criteo a.tsv -o clean --table-rows 7 \
    --overwrite --quiet && ! cmp -s clean/manifest.txt killed/manifest.txt"
mkdir -p foreign && touch foreign/notes.txt
if "$parallaxc" data criteo a.tsv -o foreign --table-rows 7 --quiet >out.log 2>&1; then
    fail "a folder of other files is written into"
else
    check "a folder of other files is refused" bash -c "grep -q 'not a Parallax dataset' out.log &&
        [ -e foreign/notes.txt ]"
fi

# Bounded memory: the converter's peak RSS (getrusage of the child) does
# not grow with the input: px_gen_criteo's logs of 25 MB and of 4 times
# that, and a line longer than the line limit is an error, not a buffer
# that grows with it.
gen=$(dirname "$parallaxc")/../tools/px_gen_criteo
peak_rss() { # OUT COMMAND...: the command's peak RSS in KiB into OUT
    local out=$1
    shift
    "$py" -c 'import resource, subprocess, sys
subprocess.run(sys.argv[2:], check=True)
open(sys.argv[1], "w").write("%d" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' \
        "$out" "$@"
}
for mb in 25 100; do
    check "criteo: $mb MB of generated logs" "$gen" g.tsv --bytes ${mb}000000 --seed 2
    check "criteo: $mb MB converted" peak_rss rss$mb "$parallaxc" data criteo g.tsv -o g$mb \
        --table-rows 1000000 --quiet
    check "criteo: $mb MB converted, --threads 3" peak_rss rss${mb}t "$parallaxc" data criteo \
        g.tsv -o g${mb}t --table-rows 1000000 --quiet --threads 3
    check "criteo: $mb MB, --threads 3: the same dataset" cmp g$mb/manifest.txt g${mb}t/manifest.txt
    rm -rf g.tsv g$mb g${mb}t
done
check "criteo: the same peak RSS at 4 times the input, < 256 MiB" "$py" - <<'PY'
for t in ("", "t"):
    small, big = (int(open("rss%d%s" % (mb, t)).read()) for mb in (25, 100))
    print("peak RSS%s: %d KiB at 25 MB, %d KiB at 100 MB" % (t and ", --threads 3", small, big))
    assert big <= small + 4096 and big < 256 * 1024, (small, big)
PY
head -c $((17 << 20)) /dev/zero | tr '\0' 'a' >long.tsv
if "$parallaxc" data criteo long.tsv -o long --table-rows 100 --quiet >out.log 2>&1; then
    fail "a 17 MiB line: accepted"
else
    check "a 17 MiB line: refused, nothing left" bash -c "grep -q 'long.tsv:1: the line is longer \
than 16 MiB' out.log && [ -z \"\$(ls -A long 2>/dev/null)\" ]"
fi

# csv: a header, tabs, a hashed text column, skipped columns.
printf 'y\tname\tjunk\ta\tb\n1\talice\tx\t0.5\t-3\n0\tbob\ty\t2e3\t7\n1\tcarol\tz\t-1\t9\n' >t.csv
check "csv: schema, header, tab" "$parallaxc" data csv t.csv -o c --delimiter tab --header \
    --schema y:float32,who:hash1000,_:skip,x:float32:2 --quiet
check "csv: --header, --threads 2: the same dataset" bash -c "'$parallaxc' data csv t.csv -o c_threads \
    --delimiter tab --header --schema y:float32,who:hash1000,_:skip,x:float32:2 --quiet \
    --threads 2 && cmp c/manifest.txt c_threads/manifest.txt"
check "csv: values" "$py" - <<PY
import sys
sys.path.insert(0, "$tmp")
from refs import *
d = load("c")
assert np.array_equal(d["y"], np.array([1, 0, 1], np.float32)), d["y"]
assert np.array_equal(d["x"], np.array([[0.5, -3], [2000, 7], [-1, 9]], np.float32)), d["x"]
want = [(hash_bytes(INIT, s) * 1000) >> 64 for s in (b"alice", b"bob", b"carol")]
assert d["who"].tolist() == want, (d["who"], want)
PY
printf 'y\tname\tjunk\ta\tb\n1\talice\tx\t0.5\tseven\n' >t2.csv
if "$parallaxc" data csv t2.csv -o c2 --delimiter tab --header \
    --schema y:float32,who:hash1000,_:skip,x:float32:2 >out.log 2>&1; then
    fail "csv: a bad number accepted"
else
    check "csv: a bad number named" grep -q "t2.csv:2: column 5 (x): 'seven' is not a float32" out.log
fi

# tokens: ids by frequency, <eos> after each line, windows of L+1 every L.
printf 'the cat sat\non the mat the end\nthe cat\n' >corpus.txt
check "tokens" "$parallaxc" data tokens corpus.txt -o tok --vocab 5 --window 3 --quiet
if "$parallaxc" data tokens corpus.txt -o tok2 --vocab 5 --threads 2 >out.log 2>&1; then
    fail "tokens --threads 2: accepted"
else
    check "tokens --threads 2: refused" grep -q "tokens converts on one thread" out.log
fi
check "tokens: vocabulary and windows" "$py" - <<PY
import sys
sys.path.insert(0, "$tmp")
from refs import *
vocab = open("tok/vocab.txt").read().split("\n")[:-1]
assert vocab == ["<unk>", "<eos>", "the", "cat", "end"], vocab
ids = {w: i for i, w in enumerate(vocab)}
stream = []
for line in open("corpus.txt"):
    stream += [ids.get(w, 0) for w in line.split()] + [1]
d = load("tok")
n = (len(stream) - 1) // 3
want = np.array([stream[3 * k:3 * k + 4] for k in range(n)])
assert np.array_equal(d["tokens"], want[:, :3]) and np.array_equal(d["targets"], want[:, 1:])
PY
echo "$passed passed, $failed failed"
[ "$passed" -gt 0 ] && [ "$failed" -eq 0 ]
