"""One table of ``make demo``'s auto runs: per run folder (``bench/demo_auto.sh``), the
baseline's and auto's step time, communication time, how many times fewer bytes auto put on
the wire, and the final validation losses (from the folder's metrics.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pycomm.train.plot import run_label


def row(folder: Path) -> str:
    metrics = json.loads((folder / "metrics.json").read_text())
    cmp, runs = metrics["comparison"], metrics["runs"]
    (b_step, a_step), (b_comm, a_comm) = cmp["step_ms"], cmp["comm_ms"]
    (b_wire, a_wire), (b_val, a_val) = cmp["wire_mb"], cmp["final_val"]
    net = "1 Gbit/s" if folder.name.endswith("1gbit") else "shared memory"
    return (
        f"{net:<14}{b_step:>10.1f}{a_step:>9.1f}{a_step / b_step:>8.2f}x"
        f"{b_comm:>10.1f}{a_comm:>9.1f}{b_wire / max(a_wire, 1e-12):>8.1f}x"
        f"{b_val:>10.3f}{a_val:>9.3f}  {folder / 'loss.png'} ({run_label(runs[1])})"
    )


def main() -> None:
    print("\n== codec=auto against the baseline (ms per step; loss: final validation)")
    print(
        f"{'network':<14}{'step base':>10}{'auto':>9}{'ratio':>9}{'comm base':>10}{'auto':>9}"
        f"{'fewer B':>9}{'loss base':>10}{'auto':>9}  plot"
    )
    for folder in sys.argv[1:]:
        print(row(Path(folder)))


if __name__ == "__main__":
    main()
