"""An alpha-beta-gamma model of the compressed allreduce, calibrated on the emulator, and its
predictions from 8 to 4096 ranks at 10-400 Gbit/s.

    python bench/perf_model.py            # measure the codecs here, fit, print, plot

Per algorithm, for B bytes per rank on N ranks (L nodes of k ranks for the hierarchy), codec
ratio r, link time beta per byte, message latency alpha, and gamma the single-core seconds per
raw byte of compressing (c), decoding (d) and adding (a):

    plain ring   2(N-1)·alpha + 2(N-1)/N·B·beta          + (N-1)/N·B·gamma_a
    ebq ring     2(N-1)·alpha + 2(N-1)/N·B/r·g(N)·beta   + B·(gamma_c + gamma_d)
    twophase     2(N-1)·alpha + 2(N-1)/N·B/r·beta        + B·(gamma_c·(1 + 1/N) + 2·gamma_d)
    allgather    (N-1)·alpha  + (N-1)·B/r·beta           + B·(gamma_c + N·gamma_d)
    hierarchy    node reduce-scatter and allgather at memory speed + the flat algorithm on
                 L nodes for each local rank's slice of B/k

g(N) = g0 + g1·log2(N) is ebq's index growth, fitted to the bytes CommStats counted. The codec
gammas are measured on this machine (one core). On the emulator the ranks share the machine's
cores, so the CPU term is multiplied by kappa·max(1, ranks/cores); alpha, beta's efficiency
(beta = eff / rate) and kappa are fitted by least squares on the relative error to the timings
in bench/calibration/runs.jsonl (``perf_calibrate.py``). Predictions for a cluster take one
core per rank (kappa = 1), the fitted link efficiency, alpha = 5 µs and the memory bandwidth
measured here for the node steps.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import numpy as np
import pycodecs

from pycomm.collectives.plan import choose
from pycomm.collectives.spec import make_spec

HERE = Path(__file__).parent
RUNS = HERE / "calibration" / "runs.jsonl"
CODECS = {"ebq": dict(codec="ebq", error_bound=1e-3, mode="rel"), "int8": {}, "sign": {}}
CLUSTER_ALPHA = 5e-6


def codec_speeds(mib: int = 16) -> dict:
    """Seconds per raw byte on one core (median of 7): compress and decode for each codec, a
    float32 add, memcpy (the node steps)."""
    x = np.random.default_rng(0).laplace(0, 1e-3, mib << 18).astype(np.float32)
    out = np.empty_like(x)

    def best(call) -> float:  # the median: the emulator's runs shared the cores alike
        times = []
        for _ in range(7):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        return float(np.median(times)) / x.nbytes

    speeds = {}
    for name, kw in CODECS.items():
        kw = {"codec": name, **kw}
        frame = pycodecs.compress(x, **kw)
        speeds[name] = dict(
            c=best(lambda: pycodecs.compress(x, **kw)),  # noqa: B023
            d=best(lambda: pycodecs.decompress(frame, out=out)),  # noqa: B023
            ratio=x.nbytes / len(frame),
        )
    speeds["add"] = best(lambda: np.add(x, out, out=out))
    speeds["memcpy"] = best(lambda: np.copyto(out, x))
    return speeds


def growth(n: int, g: tuple[float, float]) -> float:
    return g[0] + g[1] * math.log2(max(n, 2))


SEGMENT_BYTES = 4 << 21  # pycomm's pipeline segment (2^21 float32): one set of rounds each


def flat_time(alg, codec, n, b, alpha, beta, cpu, sp, g, ratio=None) -> float:
    """Seconds of one flat allreduce (cpu: multiplier of the CPU term; ratio: the codec's on
    these data, else the one measured here)."""
    if n <= 1:
        return 0.0
    if alg == "plain":
        return 2 * (n - 1) * alpha + 2 * (n - 1) / n * b * beta + cpu * (n - 1) / n * b * sp["add"]
    s = sp[codec]
    r = ratio or s["ratio"]
    rounds = math.ceil(b / SEGMENT_BYTES) * (n - 1) * (1 if alg == "allgather" else 2)
    if alg == "ring":
        wire, work = 2 * (n - 1) / n * b / r * growth(n, g), b * (s["c"] + s["d"])
    elif alg == "twophase":
        wire, work = 2 * (n - 1) / n * b / r, b * (s["c"] * (1 + 1 / n) + 2 * s["d"])
    elif alg == "allgather":
        wire, work = (n - 1) * b / r, b * (s["c"] + n * s["d"])
    else:
        raise ValueError(alg)
    return rounds * alpha + wire * beta + cpu * work


def leader_algorithm(codec: str, leaders: int, b: float) -> str:
    """The flat algorithm pycomm runs among the leaders for b bytes of float32 (plan.choose)."""
    options = {k: v for k, v in CODECS[codec].items() if k != "codec"}
    return choose(make_spec(codec, **options), leaders, int(b // 4))


def time_of(variant, n, nodes, b, m: dict, sp, g, ratio=None) -> float:
    """Seconds of a variant ('mpi', 'ebq ring', 'int8 hierarchy', ...) on n ranks in nodes
    nodes; m: alpha, beta (link s/byte), cpu (multiplier), local (node s/byte)."""
    alpha, beta, cpu = m["alpha"], m["beta"], m["cpu"]
    if variant == "mpi":
        return flat_time("plain", None, n, b, alpha, beta, cpu, sp, g)
    codec, alg = variant.split()
    if alg != "hierarchy":
        return flat_time(alg, codec, n, b, alpha, beta, cpu, sp, g, ratio)
    per = n // nodes  # a reduce-scatter (float64 for ebq) and an allgather in the node
    wide = 2 if codec == "ebq" else 1
    share = (per - 1) / per
    local = share * (b * (wide + 1) * m["local"] + cpu * b * wide * sp["add"])
    alg = leader_algorithm(codec, nodes, b / per)  # every local rank: one slice of b/per
    return local + flat_time(alg, codec, nodes, b / per, alpha, beta, cpu, sp, g, ratio)


def load_runs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def fit_growth(runs: list[dict]) -> tuple[float, float]:
    """g0 + g1·log2(N) through ebq's sent bytes over the ideal 2(N-1)/N·B/ratio."""
    pts = [
        (
            math.log2(r["ranks"]),
            r["sent"] / (2 * (r["ranks"] - 1) / r["ranks"] * r["bytes"] / r["ratio"]),
        )
        for r in runs
        if r["variant"] == "ebq ring" and r["ranks"] > 1
    ]
    if len(pts) < 2:
        return 1.0, 0.0
    xs, ys = zip(*pts, strict=True)
    g1, g0 = np.polyfit(xs, ys, 1)
    return float(g0), float(g1)


FITTED = ("alpha", "eff", "kappa", "local")


def emulator(params: dict, run: dict, cores: int) -> dict:
    """The model's parameters for one emulated run."""
    return dict(
        alpha=params["alpha"],
        beta=params["eff"] * 8 / (run["gbit"] * 1e9),
        cpu=params["kappa"] * max(1.0, run["ranks"] / cores),  # waiting MPICH ranks poll
        local=params["local"],
    )


def fit(runs, sp, g, cores):
    """alpha, link efficiency, CPU sharing and the emulated nodes' local s/byte minimising the
    squared relative errors: a pattern search in log space."""

    def errors(params):
        out = []
        for r in runs:
            m = emulator(params, r, cores)
            n, nodes, ratio = r["ranks"], r["nodes"], r["ratio"]
            if "hierarchy" in r["variant"]:  # a rank compressed its slice of B: 1/(n/nodes)
                ratio /= n // nodes
            t = time_of(r["variant"], n, nodes, r["bytes"], m, sp, g, ratio)
            out.append(t / r["seconds"] - 1)
        return np.array(out)

    def cost(params):
        return float(np.sum(errors(params) ** 2))

    params = dict(alpha=1e-3, eff=1.5, kappa=1.5, local=1e-9)
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
    return params, errors(params)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", default=str(RUNS))
    p.add_argument("--mib", type=float, default=100, help="MiB per rank for the predictions")
    p.add_argument("--plot", default=str(HERE / "perf_model.png"))
    args = p.parse_args()
    cores = os.cpu_count() or 1
    sp = codec_speeds()
    print(f"this machine, one core ({cores} cores, load {os.getloadavg()[0]:.1f}):")
    for name in CODECS:
        s = sp[name]
        print(
            f"  {name:<5} compress {1e-9 / s['c']:.2f} GB/s, decode {1e-9 / s['d']:.2f} GB/s, "
            f"ratio {s['ratio']:.2f}"
        )
    print(f"  add {1e-9 / sp['add']:.2f} GB/s, memcpy {1e-9 / sp['memcpy']:.2f} GB/s")
    runs = load_runs(Path(args.runs))
    g = fit_growth(runs)
    params, errs = fit(runs, sp, g, cores)
    print(
        f"fit on {len(runs)} emulated runs: alpha {params['alpha'] * 1e6:.0f} µs, link "
        f"efficiency {1 / params['eff']:.2f} of the rate, CPU x{params['kappa']:.2f} (times "
        f"ranks/cores), emulated node steps {8e-9 / params['local']:.2f} Gbit/s, ebq growth "
        f"{g[0]:.3f} + {g[1]:.3f}·log2 N"
    )
    print("\nmodel against measured (emulator):")
    print(
        f"{'ranks':>5} {'nodes':>5} {'Gbit/s':>6} {'variant':<16} {'measured s':>10} "
        f"{'model s':>8} {'error':>7}"
    )
    for r, e in zip(runs, errs, strict=True):
        model = r["seconds"] * (1 + e)
        print(
            f"{r['ranks']:>5} {r['nodes']:>5} {r['gbit']:>6g} {r['variant']:<16} "
            f"{r['seconds']:>10.3f} {model:>8.3f} {e:>+7.0%}"
        )
    print(f"worst |error| {np.abs(errs).max():.0%}")
    predict(sp, g, params["eff"], args.mib * 2**20, Path(args.plot))


def predict(sp, g, eff, b, plot: Path) -> None:
    """Cluster predictions: one core per rank, 8 ranks per node for the hierarchy."""
    ranks = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    rates = [10, 25, 100, 200, 400]
    lines = {
        "plain ring": ("mpi", False),
        "ebq ring": ("ebq ring", False),
        "int8 twophase": ("int8 twophase", False),
        "sign twophase": ("sign twophase", False),
        "int8 allgather": ("int8 allgather", False),
        "ebq hierarchy (8/node)": ("ebq hierarchy", True),
        "int8 hierarchy (8/node)": ("int8 hierarchy", True),
    }

    def t(variant, n, hier, gbit):
        m = dict(alpha=CLUSTER_ALPHA, beta=eff * 8 / (gbit * 1e9), cpu=1.0, local=sp["memcpy"])
        return time_of(variant, n, max(1, n // 8) if hier else n, b, m, sp, g)

    print(f"\npredicted seconds per allreduce of {b / 2**20:.0f} MiB per rank (cluster):")
    for gbit in rates:
        print(f"  {gbit} Gbit/s")
        print("    " + f"{'ranks':<24}" + "".join(f"{n:>8}" for n in ranks))
        for label, (variant, hier) in lines.items():
            row = "".join(f"{t(variant, n, hier, gbit):>8.3f}" for n in ranks)
            print(f"    {label:<24}{row}")
    print("\nwhere compression stops paying (at 1024 ranks: the link rate above which the plain")
    print("ring is faster):")
    for label, (variant, hier) in list(lines.items())[1:]:
        lo, hi = 0.1, 10_000.0
        if t(variant, 1024, hier, hi) < t("mpi", 1024, False, hi):
            print(f"  {label:<24} pays at every rate up to {hi:.0f} Gbit/s")
            continue
        for _ in range(60):
            mid = math.sqrt(lo * hi)
            if t(variant, 1024, hier, mid) < t("mpi", 1024, False, mid):
                lo = mid
            else:
                hi = mid
        print(f"  {label:<24} {lo:8.1f} Gbit/s")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5), sharey=False)
    for ax, gbit in zip(axes, (10, 100, 400), strict=True):
        for label, (variant, hier) in lines.items():
            ax.plot(ranks, [t(variant, n, hier, gbit) for n in ranks], marker=".", label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{gbit} Gbit/s per rank, {b / 2**20:.0f} MiB per rank")
        ax.set_xlabel("ranks")
        ax.set_ylabel("seconds per allreduce (model)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(plot, dpi=110)
    print(f"\nplot: {plot}")


if __name__ == "__main__":
    main()
