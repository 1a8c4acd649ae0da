"""The fit: four parameters (alpha; the link efficiency, beta = eff·8/rate; kappa; tcp, the CPU
seconds per byte through the network stack, loopback or veth alike: a separate cost for the
bytes that leave a namespace did no better held out) chosen by least squares on the relative
errors to the median of each point's repeats in calibration/runs.jsonl, with
g(N) = g0 + g1·log2 N fitted to the bytes ebq's ring sent.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .counts import counts_of
from .timing import emulated_time

FITTED = ("alpha", "eff", "kappa", "tcp")


def load_runs(path: Path) -> list[dict]:
    """The runs perf_calibrate.py wrote, one JSON object a line."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def merge_repeats(runs: list[dict]) -> list[dict]:
    """One row per point (ranks, nodes, rate, bytes, variant), in first-seen order: the median
    of its repeats' seconds, their spread (slowest over fastest, minus 1), their loads."""
    points: dict[tuple, list[dict]] = {}
    for r in runs:
        points.setdefault((r["ranks"], r["nodes"], r["gbit"], r["bytes"], r["variant"]), []).append(
            r
        )
    merged = []
    for rows in points.values():
        seconds = [r["seconds"] for r in rows]
        merged.append(
            {
                **rows[0],
                "seconds": float(np.median(seconds)),
                "spread": max(seconds) / min(seconds) - 1,
                "loads": [r.get("load", float("nan")) for r in rows],
            }
        )
    return merged


def run_ratio(run: dict) -> float:
    """The codec's ratio on a run's data: the hierarchy's stats count its slice of 1/k of
    the bytes against the whole input."""
    if "hierarchy" in run["variant"]:
        return run["ratio"] / (run["ranks"] // run["nodes"])
    return run["ratio"]


def fit_growth(runs: list[dict]) -> tuple[float, float]:
    """g0 + g1·log2(N) through the bytes ebq's ring sent: (N-1)/N·B/r in the reduce-scatter,
    then (N-1)·g·B/(rN) in the allgather of the reduced frames."""
    pts = []
    for r in runs:
        if r["variant"] == "ebq ring" and r["ranks"] > 1:
            one = (r["ranks"] - 1) / r["ranks"] * r["bytes"] / r["ratio"]
            pts.append((math.log2(r["ranks"]), r["sent"] / one - 1))
    if len(pts) < 2:
        return 1.0, 0.0
    xs, ys = zip(*pts, strict=True)
    g1, g0 = np.polyfit(xs, ys, 1)
    return float(g0), float(g1)


def errors(params: dict, runs: list[dict], sp: dict, g, cores: int) -> np.ndarray:
    """Model over measured, minus 1, for each run."""
    out = []
    for r in runs:
        n, nodes = r["ranks"], r["nodes"]
        c = counts_of(r["variant"], n, nodes, r["bytes"], sp, g, run_ratio(r))
        out.append(emulated_time(c, params, n, r["gbit"], cores) / r["seconds"] - 1)
    return np.array(out)


def fit(runs: list[dict], sp: dict, g, cores: int) -> dict:
    """The FITTED parameters minimising the squared relative errors: a pattern search in log
    space."""

    def cost(params):
        return float(np.sum(errors(params, runs, sp, g, cores) ** 2))

    params = dict(alpha=1e-4, eff=1.0, kappa=1.0, tcp=1e-10)
    best, step = cost(params), 1.0
    while step > 1e-3:
        moved = False
        for k in FITTED:
            for f in (math.exp(step), math.exp(-step)):
                trial = {**params, k: params[k] * f}
                c = cost(trial)
                if c < best:
                    params, best, moved = trial, c, True
        if not moved:
            step /= 2
    return params


def held_out_errors(runs: list[dict], sp: dict, cores: int) -> np.ndarray:
    """Each run's error when its configuration (ranks, nodes) is left out of the fit (the
    growth fit included)."""
    out = np.zeros(len(runs))
    for config in {(r["ranks"], r["nodes"]) for r in runs}:
        inside = [i for i, r in enumerate(runs) if (r["ranks"], r["nodes"]) == config]
        rest = [r for r in runs if (r["ranks"], r["nodes"]) != config]
        g = fit_growth(rest)
        params = fit(rest, sp, g, cores)
        out[inside] = errors(params, [runs[i] for i in inside], sp, g, cores)
    return out
