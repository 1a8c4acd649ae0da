#!/usr/bin/env bash
# make demo, second part: codec="auto" against the baseline in short runs (a data-parallel GPT
# on 2 ranks, 20 steps each), at full speed (shared memory) and, where this machine allows it
# (root, ip netns, tc: bench/slow_net.sh), under an emulated 1 Gbit/s link; then one table of
# both (bench/demo_table.py). Each run writes its summary.txt, metrics.json and loss.png.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py=$here/.venv/bin/python
out=${1:-runs}
job=(-m pycomm.train --dp 2 --layers 2 --width 256 --heads 4 --seq 64 --batch 8 --steps 20
     --eval-every 10 --baseline --compress auto --no-progress)
export OMP_NUM_THREADS=1
echo "== codec=auto against the baseline, full speed (shared memory)"
"$here/.venv/bin/mpiexec" -n 2 "$py" "${job[@]}" --out "$out/demo-auto"
runs=("$out/demo-auto")
probe=mpiucc-probe-$$
if [[ $(id -u) == 0 ]] && ip netns add "$probe" 2>/dev/null; then
    ip netns del "$probe"
    echo "== codec=auto against the baseline, emulated 1 Gbit/s (bench/slow_net.sh)"
    "$here/bench/slow_net.sh" 1gbit 2 "$py" "${job[@]}" --out "$out/demo-auto-1gbit"
    runs+=("$out/demo-auto-1gbit")
else
    echo "== the 1 Gbit/s run is skipped: bench/slow_net.sh needs root and ip netns"
fi
"$py" "$here/bench/demo_table.py" "${runs[@]}"
