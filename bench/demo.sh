#!/usr/bin/env bash
# make demo: the training job's baseline, fixed compression (the --compress preset) and
# codec="auto" trained in lockstep on 2 ranks (data parallel, the demo preset: one rank per
# core, as one per node). Where this machine allows it (root, ip netns, tc: bench/slow_net.sh)
# every rank gets its own emulated 1 Gbit/s link, as between nodes, and a shared-memory run
# follows to show what auto does where compression cannot pay; elsewhere the main job runs on
# shared memory. Ends with one table
# (bench/demo_table.py): time to the baseline's final validation loss, step and communication
# time, bytes. Each run folder holds summary.txt, metrics.json and loss.png.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py=$here/.venv/bin/python
out=${1:-runs}
main=(-m pycomm.train --preset demo --compress preset auto)
shm=(-m pycomm.train --dp 2 --layers 2 --width 256 --heads 4 --seq 64 --batch 8 --steps 100
     --eval-every 20 --baseline --compress auto --no-progress)
export OMP_NUM_THREADS=1
probe=mpiucc-probe-$$
if [[ $(id -u) == 0 ]] && ip netns add "$probe" 2>/dev/null; then
    ip netns del "$probe"
    echo "== the main job on 2 emulated nodes, each with its own 1 Gbit/s link (bench/slow_net.sh)"
    "$here/bench/slow_net.sh" --links 2 1gbit 2 "$py" "${main[@]}" --out "$out/demo"
    echo "== shared memory, where compression cannot pay: codec=auto against the baseline"
    "$here/.venv/bin/mpiexec" -n 2 "$py" "${shm[@]}" --out "$out/demo-shm"
    "$py" "$here/bench/demo_table.py" "1 Gbit/s per rank=$out/demo" "shared memory=$out/demo-shm"
else
    echo "== the main job on shared memory (bench/slow_net.sh, which emulates a slow network,"
    echo "   needs root and ip netns): compression cannot pay here, where moving bytes is as"
    echo "   cheap as compressing them; see BENCHMARKS.md for the same job at 1 Gbit/s"
    "$here/.venv/bin/mpiexec" -n 2 "$py" "${main[@]}" --out "$out/demo"
    "$py" "$here/bench/demo_table.py" "shared memory=$out/demo"
fi
