#!/usr/bin/python3
"""vm_peak.py PREFIX COMMAND [ARG...]

Runs COMMAND and writes its peak virtual memory size in bytes (VmPeak of
/proc/PID/status, polled every 10 ms while it runs: the address space that
`ulimit -v` limits) to PREFIX.<rank>, the rank taken from OpenMPI's
OMPI_COMM_WORLD_RANK (0 outside mpirun). Exits with the command's status.
Use under mpirun as  mpirun -np N /usr/bin/python3 vm_peak.py PREFIX ./PROGRAM ...
The last 10 ms of growth can be missed: use it for baselines with margin."""
import os
import subprocess
import sys
import time

if len(sys.argv) < 3:
    raise SystemExit(__doc__)
child = subprocess.Popen(sys.argv[2:])
peak = 0
while child.poll() is None:
    try:
        with open("/proc/%d/status" % child.pid) as f:
            for line in f:
                if line.startswith("VmPeak:"):
                    peak = max(peak, int(line.split()[1]) * 1024)
    except OSError:
        pass
    time.sleep(0.01)
with open("%s.%s" % (sys.argv[1], os.environ.get("OMPI_COMM_WORLD_RANK", "0")), "w") as f:
    f.write("%d\n" % peak)
sys.exit(child.returncode)
