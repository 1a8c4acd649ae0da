"""The table ``make demo`` ends with (``bench/demo.sh``): per network and run, the training
time to the baseline's final validation loss, step and communication time, bytes on the wire
and the final loss, read from each run folder's metrics.json.

    python bench/demo_table.py "1 Gbit/s per rank=runs/demo" "shared memory=runs/demo-shm"
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pycomm.train.report import wire_bytes
from pycomm.train.targets import TARGET_SLACK

HEAD = ("network", "run", "to target (s)", "step (ms)", "comm (ms)", "wire (MB)", "val loss")


def rows(network: str, folder: Path) -> list[tuple[str, ...]]:
    metrics = json.loads((folder / "metrics.json").read_text())
    runs, reached = metrics["runs"], metrics.get("seconds_to_target") or {}
    base = reached.get("baseline")
    out = []
    for run in runs:
        n, secs = run["timed_steps"], reached.get(run["name"])
        to_target = "not reached" if secs is None else f"{secs:.1f}"
        if secs is not None and base and run["name"] != "baseline":
            to_target += f" ({base / secs:.2f}x)"
        wire = wire_bytes(run)
        out.append(
            (
                network,
                run["name"],
                to_target,
                f"{1e3 * run['timed_s'] / n:.0f}",
                f"{1e3 * run['comm_s_per_step']:.0f}",
                f"{wire / 1e6:.0f}",
                f"{run['final_val']:.4f}",
            )
        )
    return out


def main() -> None:
    table = [HEAD]
    plots = []
    for arg in sys.argv[1:]:
        network, _, folder = arg.rpartition("=")
        table += rows(network, Path(folder))
        plots.append(f"{folder}/loss.png")
    widths = [max(len(r[i]) for r in table) for i in range(len(HEAD))]
    print(
        f"\n== time to the baseline's final validation loss (+{100 * TARGET_SLACK:g}%), "
        "per run (x: how many times sooner than the baseline)"
    )
    for i, r in enumerate(table):
        print(
            "  ".join(
                c.ljust(w) if j < 2 else c.rjust(w)
                for j, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
        if i == 0:
            print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    print("plots (validation loss against wall-clock time): " + ", ".join(plots))


if __name__ == "__main__":
    main()
