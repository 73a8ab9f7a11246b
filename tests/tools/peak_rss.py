#!/usr/bin/python3
"""peak_rss.py PREFIX COMMAND [ARG...]

Runs COMMAND and writes its peak resident set size in bytes (getrusage of
the finished child, measured from outside the program) to PREFIX.<rank>,
the rank taken from OpenMPI's OMPI_COMM_WORLD_RANK (0 outside mpirun).
Exits with the command's status. Use under mpirun as
  mpirun -np N /usr/bin/python3 peak_rss.py PREFIX ./PROGRAM ..."""
import os
import resource
import subprocess
import sys

if len(sys.argv) < 3:
    raise SystemExit(__doc__)
status = subprocess.call(sys.argv[2:])
rank = os.environ.get("OMPI_COMM_WORLD_RANK", "0")
with open("%s.%s" % (sys.argv[1], rank), "w") as f:
    # Linux reports ru_maxrss in KiB
    f.write("%d\n" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024))
sys.exit(status)
