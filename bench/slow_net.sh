#!/usr/bin/env bash
# Run a command on N MPI ranks inside a network namespace whose loopback is rate-limited,
# with MPICH forced onto TCP, so that the limit applies to all MPI traffic.
#   bench/slow_net.sh RATE N COMMAND...      e.g. bench/slow_net.sh 1gbit 4 python bench/collective_bench.py
# Needs root (ip netns, tc). Only loopback inside a namespace made here is touched.
set -euo pipefail
rate=$1 ranks=$2
shift 2
ns=mpiucc-slow-$$
here=$(cd "$(dirname "$0")/.." && pwd)
mpiexec=${MPIEXEC:-$here/.venv/bin/mpiexec}
cleanup() { ip netns del "$ns" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$ns"
ip netns exec "$ns" ip link set lo up
ip netns exec "$ns" tc qdisc add dev lo root tbf rate "$rate" burst 256kb latency 50ms
ip netns exec "$ns" env MPIR_CVAR_NOLOCAL=1 MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp \
    FI_TCP_IFACE=lo "$mpiexec" -n "$ranks" "$@"
