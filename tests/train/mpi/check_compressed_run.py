"""A short compressed training run stays close to its uncompressed baseline.

    mpiexec -n 4 python check_compressed_run.py OUT_DIR TOLERANCE [train options...]

Runs ``python -m pycomm.train --baseline --compress`` in-process on every rank, then checks
metrics.json on rank 0: same number of steps, final validation losses within TOLERANCE
(relative), bytes on the wire reduced, a training loss that went down, replica checks passed
in both runs; with ``--fsdp``, FSDP's reduce-scatter and all-gather in the operator table.
"""

import json
import sys
from pathlib import Path

from mpi4py import MPI

from pycomm.train.__main__ import main

out, tolerance, extra = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
rc = main(["--baseline", "--compress", "--no-progress", "--out", str(out), *extra])
assert rc == 0, rc
if MPI.COMM_WORLD.Get_rank() == 0:
    metrics = json.loads((out / "metrics.json").read_text())
    base, comp = metrics["runs"]
    cmp = metrics["comparisons"]["compressed"]
    assert base["name"] == "baseline" and comp["name"] == "compressed"
    assert len(base["train_loss"]) == len(comp["train_loss"])
    assert base["final_val"] < base["val"][0][1] or base["final_val"] < 5.0, base["val"]
    assert abs(cmp["val_gap"]) <= tolerance, cmp
    assert cmp["wire_mb"][1] < cmp["wire_mb"][0] / 2, cmp
    for run in (base, comp):  # the first step, the last, and every 25th checked
        assert run["replica_checks"] >= 2, run["replica_checks"]
        first, last = run["train_loss"][:3], run["train_loss"][-3:]
        assert sum(last) < sum(first), f"{run['name']} did not learn: {run['train_loss']}"
    if "--fsdp" in extra:  # FSDP2 moved the gradients and weights, DDP nothing
        for run in (base, comp):
            assert run["ops"]["fsdp_rs"]["calls"] and run["ops"]["fsdp_ag"]["calls"], run["ops"]
        rs, ag = comp["ops"]["fsdp_rs"], comp["ops"]["fsdp_ag"]
        assert rs["frame_bytes"] < rs["raw_bytes"] / 2 and ag["frame_bytes"] < ag["raw_bytes"] / 3
        assert "FSDP reduce-scatter" in (out / "summary.txt").read_text()
    for name in ("summary.txt", "loss.png"):
        assert (out / name).stat().st_size > 0
    print(
        f"compressed run: val gap {100 * cmp['val_gap']:+.2f}% "
        f"(tolerance {100 * tolerance:.1f}%): passed",
        flush=True,
    )
