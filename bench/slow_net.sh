#!/usr/bin/env bash
# Run a command on N MPI ranks over a rate-limited network, with MPICH and UCX (pycomm's UCC
# layer) forced onto TCP so that the limit applies to all their traffic between the places below.
#
#   bench/slow_net.sh RATE N COMMAND...             every rank in one namespace whose loopback is
#                                                   limited: one link shared by all traffic
#   bench/slow_net.sh --links K RATE N COMMAND...   K namespaces (N/K ranks each, in rank order),
#                                                   each with its own veth into one bridge, limited
#                                                   both ways: a switch with one port per node. With
#                                                   K < N each namespace is an emulated node: its
#                                                   ranks talk over their own loopback (unlimited)
#                                                   and get MPIUCC_NODE set to it (the hierarchy).
# e.g. bench/slow_net.sh --links 4 1gbit 4 python bench/ddp_bench.py
# Needs root (ip netns, tc). Touches only namespaces made here and their addresses (10.77.0.0/24);
# removes them on exit.
set -euo pipefail
links=0
if [[ ${1:-} == --links ]]; then
    links=$2
    shift 2
fi
rate=$1 ranks=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
mpiexec=${MPIEXEC:-$here/.venv/bin/mpiexec}
pfx=mpiucc-$$
made=()
cleanup() { for ns in "${made[@]}"; do ip netns del "$ns" 2>/dev/null || true; done; }
trap cleanup EXIT
limit() { # namespace device
    ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate" burst 256kb latency 50ms
}
tcp=(MPIR_CVAR_NOLOCAL=1 MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp UCX_TLS=tcp,self)

if [[ $links == 0 ]]; then
    ns=$pfx-shared
    ip netns add "$ns" && made+=("$ns")
    ip netns exec "$ns" ip link set lo up
    limit "$ns" lo
    ip netns exec "$ns" env "${tcp[@]}" FI_TCP_IFACE=lo UCX_NET_DEVICES=lo "$mpiexec" -n "$ranks" "$@"
    exit
fi

if ((links < 1 || links > 200 || ranks % links)); then
    echo "slow_net.sh: --links K needs 1 <= K <= 200 dividing the $ranks ranks" >&2
    exit 2
fi
br=$pfx-br
ip netns add "$br" && made+=("$br")
ip -n "$br" link add br0 type bridge
ip -n "$br" link set br0 up
per=$((ranks / links))
cmd=()
for ((i = 0; i < links; i++)); do
    ns=$pfx-n$i
    ip netns add "$ns" && made+=("$ns")
    ip -n "$ns" link set lo up
    ip -n "$ns" link add eth0 type veth peer name p$i netns "$br"
    ip -n "$ns" addr add 10.77.0.$((i + 1))/24 dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$br" link set p$i master br0
    ip -n "$br" link set p$i up
    limit "$ns" eth0 # what the node sends
    limit "$br" p$i  # what it receives
    ((i > 0)) && cmd+=(:)
    cmd+=(-n "$per" ip netns exec "$ns" env "${tcp[@]}" FI_TCP_IFACE=eth0 GLOO_SOCKET_IFNAME=eth0)
    cmd+=(UCX_NET_DEVICES=eth0)
    cmd+=(MPIUCC_NODE=n$i "$@")
done
"$mpiexec" "${cmd[@]}"
