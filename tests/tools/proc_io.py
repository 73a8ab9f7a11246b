#!/usr/bin/python3
"""proc_io.py PREFIX COMMAND [ARG...]

Runs COMMAND and writes what the kernel counted of its reads, from outside
the program: the rchar (bytes returned by read and pread calls) and
read_bytes (bytes fetched from storage) lines of /proc/PID/io, taken when
the command has exited but before it is reaped, to PREFIX.<rank> (the rank
from OpenMPI's OMPI_COMM_WORLD_RANK, 0 outside mpirun), as JSON. Exits with
the command's status. Use under mpirun as
  mpirun -np N /usr/bin/python3 proc_io.py PREFIX ./PROGRAM ..."""
import json
import os
import subprocess
import sys

if len(sys.argv) < 3:
    raise SystemExit(__doc__)
child = subprocess.Popen(sys.argv[2:])
# WNOWAIT: the exited child stays a zombie whose /proc/PID/io still holds
# the counts of all its threads.
os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
io = {}
with open("/proc/%d/io" % child.pid) as f:
    for line in f:
        key, value = line.split(":")
        io[key.strip()] = int(value)
status = child.wait()
rank = os.environ.get("OMPI_COMM_WORLD_RANK", "0")
with open("%s.%s" % (sys.argv[1], rank), "w") as f:
    json.dump(io, f)
sys.exit(status)
