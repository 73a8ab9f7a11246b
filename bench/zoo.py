#!/usr/bin/python3
"""Training speed of every zoo architecture (tests/zoo/models.py) against
PyTorch eager, at 1 and 2 threads per rank, batch 32, SGD, in one run.

usage: bench/zoo.py PARALLAXC [--models a,b] [--threads 1,2] [--repeat 3]
                    [--seconds 0.5] [--wall] [--json zoo_bench.json]

Each model is exported once through python/parallax (training mode, no
constant folding) into bench/.cache/zoo/NAME and compiled once; bench/train.py
then times the program (its --stats steady-state rate) against the same
module trained by PyTorch (torch.optim.SGD; at 2 threads the fastest of three
settings of its OpenMP and BLAS threads, see bench/train.py) on the same
batches, alternating the two --repeat times, and prints each side's best
rate and their ratio (speed > 1: we are faster), with the median of the
paired ratios. A model the compiler cannot compile is listed as such. The
defaults should take about 10 minutes for the whole zoo at 1 and 2 threads
on an idle 2-core machine. Run it when the machine is otherwise idle (uptime); on a
loaded machine read the paired column.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "zoo"))


def main():
    from models import ZOO
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("parallaxc")
    ap.add_argument("--models", help="comma-separated zoo names (default: all)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", default="3")
    ap.add_argument("--seconds", default="0.5")
    ap.add_argument("--batch", default="32")
    ap.add_argument("--json", default="zoo_bench.json")
    ap.add_argument("--wall", action="store_true",
                    help="also run bench/train.py's (wall) cross-check (one more run a repeat)")
    a = ap.parse_args()
    names = a.models.split(",") if a.models else [z.name for z in ZOO]
    cmd = [sys.executable, os.path.join(HERE, "train.py"), a.parallaxc,
           "--models", ",".join("zoo:" + n for n in names), "--threads", a.threads,
           "--repeat", a.repeat, "--seconds", a.seconds, "--batch", a.batch, "--json", a.json]
    cmd += [] if a.wall else ["--no-wall"]
    sys.exit(subprocess.run(cmd).returncode)


if __name__ == "__main__":
    main()
