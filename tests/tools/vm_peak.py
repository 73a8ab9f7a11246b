#!/usr/bin/python3
"""vm_peak.py [--data] PREFIX COMMAND [ARG...]

Runs COMMAND and writes its peak virtual memory size in bytes (VmPeak of
/proc/PID/status, polled every 10 ms while it runs: the address space that
`ulimit -v` limits) to PREFIX.<rank>, the rank taken from OpenMPI's
OMPI_COMM_WORLD_RANK (0 outside mpirun). With --data, the largest VmData
seen instead (the private writable memory that `ulimit -d` limits; the
kernel keeps no peak of it). Exits with the command's status.
Use under mpirun as  mpirun -np N /usr/bin/python3 vm_peak.py PREFIX ./PROGRAM ...
The last 10 ms of growth can be missed: use it for baselines with margin."""
import os
import subprocess
import sys
import time

args = sys.argv[1:]
field = "VmPeak:"
if args[:1] == ["--data"]:
    field = "VmData:"
    args = args[1:]
if len(args) < 2:
    raise SystemExit(__doc__)
child = subprocess.Popen(args[1:])
peak = 0
while child.poll() is None:
    try:
        with open("/proc/%d/status" % child.pid) as f:
            for line in f:
                if line.startswith(field):
                    peak = max(peak, int(line.split()[1]) * 1024)
    except OSError:
        pass
    time.sleep(0.01)
with open("%s.%s" % (args[0], os.environ.get("OMPI_COMM_WORLD_RANK", "0")), "w") as f:
    f.write("%d\n" % peak)
sys.exit(child.returncode)
