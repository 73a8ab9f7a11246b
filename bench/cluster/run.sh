#!/bin/bash
# A simulated cluster on one machine, and the benchmark that runs on it.
#
# usage: bench/cluster/run.sh [--hosts H] [--rate 1gbit] [--shell] [--script FILE]
#                            [-- BENCH ARGS...]
#        (as root; BENCH ARGS go to bench/cluster/bench.py, e.g. PARALLAXC --scaling,
#        or to --script FILE instead, e.g. bench/cluster/plan_check.py)
#
# Creates H hosts (default 4; the scaling mode wants 8) as network namespaces
# on one Linux bridge. Host i is namespace px<id>-h<i> with interface eth0 at
# 10.<net>.0.<i+1>/24, joined to the bridge by a veth pair; both ends of every
# veth are shaped with `tc qdisc ... tbf rate RATE burst 256kb latency 50ms`
# (this kernel has no netem: bandwidth, no delay emulation). The bridge has
# 10.<net>.0.254 so mpirun, in the root namespace, reaches every host.
#
# Launching: a hostfile (host0 .. host<H-1>, one slot each) and an rsh agent,
# `agent HOST CMD...`, that runs CMD inside HOST's namespace under its own
# hostname (unshare --uts), so OpenMPI sees H separate nodes. bench.py runs
#   mpirun --hostfile FILE --mca plm_rsh_agent AGENT --bind-to none
#          --mca mpi_yield_when_idle 1 --mca btl tcp,self
#          --mca btl_tcp_if_include 10.<net>.0.0/24 --mca oob_tcp_if_include ...
# (design.md §7: without --bind-to none every host binds its rank to core 0;
# without yield_when_idle ranks busy-poll the two shared cores.)
# PyTorch DDP runs one process per namespace with GLOO_SOCKET_IFNAME=eth0.
#
# Every process the agent starts on host i runs in the CPU cgroup
# <prefix>-h<i> (cgroup v2 cpu.max, or v1 cpu.cfs_quota_us; unlimited), which
# bench.py --straggler cpu:C throttles.
# The cluster's description goes to bench.py in the environment:
#   PX_CLUSTER_HOSTS (count), PX_CLUSTER_HOSTFILE, PX_CLUSTER_AGENT,
#   PX_CLUSTER_SUBNET, PX_CLUSTER_NS_PREFIX, PX_CLUSTER_IFACE,
#   PX_CLUSTER_CGROUP_KIND (v1, v2 or empty), PX_CLUSTER_CGROUP_PREFIX.
# Everything (namespaces, veths, bridge, temp files) is removed on exit,
# including Ctrl-C. --shell opens a shell in the cluster instead of the bench.
set -euo pipefail

hosts=4
rate=1gbit
shell=0
script=
bench_args=()
while [ $# -gt 0 ]; do
    case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --shell) shell=1; shift ;;
    --script) script=$2; shift 2 ;;
    --) shift; bench_args=("$@"); break ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) bench_args+=("$1"); shift ;;
    esac
done
if ! [[ $hosts =~ ^[0-9]+$ ]] || [ "$hosts" -lt 1 ] || [ "$hosts" -gt 32 ]; then
    echo "run.sh: --hosts wants 1 to 32, not '$hosts'" >&2
    exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "run.sh: needs root (network namespaces, tc)" >&2
    exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
id=$$
prefix=px$((id % 100000))
net=$((100 + id % 150)) # 10.<net>.0.0/24: one subnet per concurrent cluster
subnet=10.$net.0.0/24
bridge=${prefix}br
work=$(mktemp -d /tmp/pxcluster.XXXXXX)

# Each host's processes go into a CPU cgroup of their own (unlimited), so a
# benchmark can throttle one host (bench.py --straggler cpu:...): cgroup v2's
# cpu.max where the unified hierarchy has the cpu controller, else v1's
# cpu.cfs_quota_us. None when neither is writable.
cgroup_kind=
cgroup_prefix=
if grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    cgroup_kind=v2
    cgroup_prefix=/sys/fs/cgroup/$prefix-h
elif [ -e /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    cgroup_kind=v1
    cgroup_prefix=/sys/fs/cgroup/cpu/$prefix-h
fi

teardown() {
    set +e
    for ((i = 0; i < hosts; i++)); do
        ip netns del "$prefix-h$i" 2>/dev/null
        ip link del "$prefix-v$i" 2>/dev/null
        [ -z "$cgroup_prefix" ] || rmdir "$cgroup_prefix$i" 2>/dev/null
    done
    ip link del "$bridge" 2>/dev/null
    rm -rf "$work"
}
trap teardown EXIT
trap 'exit 130' INT TERM

ip link add "$bridge" type bridge
ip addr add "10.$net.0.254/24" dev "$bridge"
ip link set "$bridge" up
shape() { tc qdisc add dev "$1" root tbf rate "$rate" burst 256kb latency 50ms; }
: >"$work/hostfile"
for ((i = 0; i < hosts; i++)); do
    ns=$prefix-h$i
    ip netns add "$ns"
    ip link add "$prefix-v$i" type veth peer name "$prefix-e$i"
    ip link set "$prefix-e$i" netns "$ns"
    ip netns exec "$ns" ip link set "$prefix-e$i" name eth0
    ip netns exec "$ns" ip addr add "10.$net.0.$((i + 1))/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    ip netns exec "$ns" ip link set lo up
    ip link set "$prefix-v$i" master "$bridge" up
    shape "$prefix-v$i"
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 50ms
    if [ -n "$cgroup_prefix" ] && ! mkdir "$cgroup_prefix$i" 2>/dev/null; then
        cgroup_kind= # not writable here: no CPU throttling
    fi
    echo "host$i slots=1" >>"$work/hostfile"
    echo "10.$net.0.$((i + 1)) host$i" >>"$work/hosts"
done

# The rsh agent: `agent [-options] HOST CMD...` (OpenMPI passes the remote
# command as words to be run by a shell, as ssh would).
cat >"$work/agent" <<EOF
#!/bin/bash
while [ \$# -gt 0 ] && [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1
shift
i=\${host#host}
if [ -n "$cgroup_kind" ]; then echo \$\$ >"$cgroup_prefix\$i/cgroup.procs"; fi
exec ip netns exec "$prefix-h\$i" unshare --uts /bin/sh -c 'hostname "\$0" && exec /bin/sh -c "\$*"' "\$host" "\$@"
EOF
chmod +x "$work/agent"

export PX_CLUSTER_HOSTS=$hosts PX_CLUSTER_HOSTFILE=$work/hostfile PX_CLUSTER_AGENT=$work/agent
export PX_CLUSTER_SUBNET=$subnet PX_CLUSTER_NS_PREFIX=$prefix PX_CLUSTER_IFACE=eth0
export PX_CLUSTER_HOSTS_FILE=$work/hosts PX_CLUSTER_RATE=$rate
export PX_CLUSTER_CGROUP_KIND=$cgroup_kind PX_CLUSTER_CGROUP_PREFIX=$cgroup_prefix
echo "cluster: $hosts hosts ($prefix-h0 ..), $subnet, links $rate (tbf, both ends)" >&2
if [ $shell -eq 1 ]; then
    "${SHELL:-/bin/bash}" || true
else
    "${PX_PYTHON:-/usr/bin/python3}" "${script:-$here/bench.py}" "${bench_args[@]}"
fi
