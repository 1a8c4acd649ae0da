"""Training bench: compressed against uncompressed, at full speed and on an emulated network.

    python bench/train_bench.py                 # presets bench and bench-dp, full and 1 Gbit/s
    python bench/train_bench.py --presets bench --rates 1gbit --steps 40 -- --width 384
    python bench/train_bench.py --presets bench-fsdp --rates 1gbit,1gbit-links   # FSDP2

Each network runs ``python -m pycomm.train --baseline --compress`` on ``--ranks`` ranks (the
uncompressed run first, same seed and data), full speed under plain ``mpiexec``, a rate under
``bench/slow_net.sh RATE N`` (MPICH on TCP inside a namespace whose loopback is limited: one
link shared by every rank), a rate named ``RATE-links`` under ``bench/slow_net.sh --links N
RATE N`` (every rank its own namespace and its own link of that rate into a switch); both need
root. Options after ``--`` go to pycomm.train. Prints, per network: step time, communication
time (every operator, codec time included, the pipeline bubble not) beside the time the
baseline's bytes would need at the link rate, wire bytes, the share of the step, the final
validation loss, and the training time to reach the target validation loss (the baseline's
final one plus 1%); then each run's operator table. Results and the raw runs go to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from pycomm.train.report import wire_bytes
from pycomm.train.targets import target_loss, time_to_loss

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RATE_UNITS = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


LINKS = "-links"


def rate_bytes_per_s(rate: str) -> float | None:
    """The link rate of a network name, in bytes per second (None: full speed)."""
    rate = rate.removesuffix(LINKS)
    for unit, scale in RATE_UNITS.items():
        if rate.endswith(unit):
            return float(rate[: -len(unit)]) * scale / 8
    return None


def run_network(rate: str, ranks: int, out: Path, train_args: list[str]) -> dict:
    """One baseline + compressed job on a network; its metrics.json."""
    python = sys.executable
    job = [
        python,
        "-m",
        "pycomm.train",
        "--baseline",
        "--compress",
        "--no-progress",
        "--out",
        str(out),
        *train_args,
    ]
    if rate == "full":
        cmd = [str(Path(python).parent / "mpiexec"), "-n", str(ranks), *job]
    elif rate.endswith(LINKS):
        cmd = [str(HERE / "slow_net.sh"), "--links", str(ranks), rate.removesuffix(LINKS)]
        cmd += [str(ranks), *job]
    else:
        cmd = [str(HERE / "slow_net.sh"), rate, str(ranks), *job]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.setdefault("MPIEXEC", str(Path(python).parent / "mpiexec"))
    print(f"[{rate}] {' '.join(cmd)}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(
            f"[{rate}] failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    print(f"[{rate}] done in {time.perf_counter() - t0:.0f} s", flush=True)
    return json.loads((out / "metrics.json").read_text())


def summary_rows(
    rate: str, metrics: dict, full_step_ms: float | None, ranks: int
) -> list[list[str]]:
    """Rows of the bench table for one network (``full_step_ms``: the full-speed baseline's)."""
    base, comp = metrics["runs"]
    target = target_loss(base)
    link = rate_bytes_per_s(rate)
    if link and rate.endswith(LINKS):
        link *= ranks  # every rank sends its share over its own link
    rows, cost = [], {}
    for run in (base, comp):
        n = run["timed_steps"]
        wire = wire_bytes(run) / n
        step_ms = 1e3 * run["timed_s"] / n
        comm_ms = 1e3 * run["comm_s_per_step"]
        wait_ms = 1e3 * run["ops"]["pp"]["wait_s"] / n
        cost[run["name"]] = None if full_step_ms is None else step_ms - full_step_ms
        ttl = time_to_loss(run, target)
        rows.append(
            [
                rate,
                run["name"],
                f"{step_ms:.0f}",
                f"{comm_ms:.0f}",
                f"{1e3 * wire / link:.0f}" if link else "-",
                f"{100 * comm_ms / step_ms:.0f}%",
                f"{wait_ms:.0f}",
                "-" if cost[run["name"]] is None else f"{cost[run['name']]:.0f}",
                f"{wire / 1e6:.2f}",
                f"{run['final_val']:.4f}",
                "-" if ttl is None else f"{ttl:.1f}",
            ]
        )
    cmp = metrics["comparisons"]["compressed"]
    net = "-"
    if rate != "full" and cost["baseline"] and cost["baseline"] > 0:
        net = f"{100 * (cost['compressed'] / cost['baseline'] - 1):+.0f}%"
    rows.append(
        [
            rate,
            "compressed vs baseline",
            "",
            f"{-100 * cmp['comm_removed']:+.0f}%",
            "",
            "",
            "",
            net,
            f"/{cmp['wire_mb'][0] / max(cmp['wire_mb'][1], 1e-12):.1f}",
            f"{100 * cmp['val_gap']:+.2f}%",
            f"target {target:.4f}",
        ]
    )
    return rows


HEAD = [
    "network",
    "run",
    "step ms",
    "comm ms",
    "link ms",
    "comm %",
    "wait ms",
    "net ms",
    "wire MB",
    "final val",
    "s to target",
]
LEGEND = """\
step ms: wall time per step (mean over ranks, first step left out); comm ms: time the training
threads spent in TP + PP + DP (DDP or FSDP) communication per step, codec included, pipeline
wait not; link ms: those wire bytes at the link rate (RATE: all ranks share the one emulated
link; RATE-links: each rank's share over its own link);
wait ms: time a stage waited for its neighbour to send (the pipeline bubble, and the
neighbour's own communication); net ms: step time above the full-speed baseline's (what the
network costs); s to target: training seconds until the validation loss is within 1% of the
baseline's final."""


def format_table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEAD, *rows]) + 2 for i in range(len(HEAD))]
    lines = ["".join(h.rjust(w) for h, w in zip(HEAD, widths, strict=True))]
    lines.append("-" * len(lines[0]))
    lines += ["".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def bench_config(
    name: str, rates: list[str], ranks: int, out: Path, train_args: list[str]
) -> tuple[str, str]:
    """Run one configuration on every network; its table and its runs' operator tables."""
    rows, tables, full_step_ms = [], [], None
    for rate in rates:
        metrics = run_network(rate, ranks, out / rate, train_args)
        if rate == "full":
            base = metrics["runs"][0]
            full_step_ms = 1e3 * base["timed_s"] / base["timed_steps"]
        rows += summary_rows(rate, metrics, full_step_ms, ranks)
        tables.append(f"== {name}, {rate}\n" + (out / rate / "summary.txt").read_text())
    return f"== {name}: {' '.join(train_args)}\n" + format_table(rows), "\n".join(tables)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    own, train_args = argv[:split], argv[split + 1 :]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rates", default="full,1gbit", help="networks: full and/or tc rates")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--presets", default="bench,bench-dp", help="pycomm.train presets, one job each")
    p.add_argument("--steps", type=int, help="training steps (default: the preset's)")
    p.add_argument("--out", default=str(HERE / "out" / "train"), help="results folder")
    args = p.parse_args(own)
    steps = ["--steps", str(args.steps)] if args.steps else []
    summaries, details = [], []
    for preset in args.presets.split(","):
        config = (["--preset", preset] if preset else []) + steps + train_args
        summary, detail = bench_config(
            preset or "custom", args.rates.split(","), args.ranks, Path(args.out) / preset, config
        )
        summaries.append(summary)
        details.append(detail)
    text = "\n\n".join([f"pycomm.train bench, {args.ranks} ranks", *summaries, LEGEND, *details])
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "bench.txt").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
