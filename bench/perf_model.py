"""An alpha-beta-gamma model of the compressed allreduce, calibrated on the emulator, and its
predictions from 8 to 4096 ranks at 10-400 Gbit/s.

    python bench/perf_model.py --measure-speeds   # the codecs on one core: calibration/speeds.json
    python bench/perf_model.py                    # fit to calibration/runs.jsonl, print, plot

The model counts, per rank and from what the code sends (pycomm/collectives: ring.py,
twophase.py, gathered.py, hierarchy.py, frames.py), for each allreduce, pipeline segment by
segment (8 MiB of float32 each):
- rounds: message steps one after another. The reduce-scatter of frames receives N-1 frames
  one at a time; an allgather of frames is one exchange on 2 ranks, else MPICH's Iallgatherv
  (a ring of N-1 steps; recursive doubling, log2 N steps, under 512 KiB in all), after an
  allgather of the sizes (log2 N steps) for ebq, whose frame sizes are not fixed;
  MPI_Allreduce is MPICH's reduce-scatter + allgather (2·log2 N steps);
- link: bytes through the busiest node's link, each way. Ranks are placed in node order; a
  frame to a rank of the same node never reaches the link, and the ranks of a node share it;
- stack: bytes the rank hands to or takes from the network stack (the emulator's TCP), and
  local: bytes the hierarchy's node steps move (the node's reduce-scatter and allgather);
- work: single-core seconds of compressing, decoding, adding frames (ebq) or decoded values.
Per algorithm, for B raw bytes per rank, ratio r, ebq's growth g(N) of the reduced frames:

    ring (ebq)   scatter of B/r, allgather of B/r·g(N)/N per rank; work B·(c + d) + (N-1)/N·B·e
    twophase     scatter of B/r, allgather of B/(rN) per rank;      work B·(c + a + c/N + d)
    allgather    allgather of B/r per rank;                          work B·(c + N·a)
    hierarchy    the node reduce-scatter (float64 for ebq) and allgather, and between them the
                 flat algorithm plan.choose picks on the nodes' ranks of each local index, for
                 a slice of B/k each (the k slices of a node share its link)

(c, d, a, e: seconds per raw byte of compress, decompress, decompress_add, ebq_add.) Every
pycomm call first agrees on its settings (a small allreduce: log2 N steps; for ebq after a
min/max pass over the input). On the emulator, with s = max(1, N/cores) (N busy-polling ranks
share the machine's cores, so both the CPU work and the wait for a peer to be scheduled
stretch with N/cores):

    time = rounds·alpha·s + pipelined(link·beta, cpu·s, segments)
    cpu  = work·kappa + (stack + local)·tcp

pipelined: the link time of one segment overlaps the CPU of the next (plan.run_segments). Four
parameters are fitted (alpha; the link efficiency, beta = eff·8/rate; kappa; tcp, the CPU
seconds per byte through the network stack, loopback or veth alike: a separate cost for the
bytes that leave a namespace did no better held out) by
least squares on the relative errors to the median of each point's repeats in
bench/calibration/runs.jsonl, with g(N) = g0 + g1·log2 N fitted to the bytes ebq's ring sent;
the codec speeds are read from calibration/speeds.json, measured in the calibration session
(one core, the best of 15). A cluster takes one core per rank (s = 1, kappa = 1), 5 µs per
step, the fitted link efficiency, network bytes at no CPU cost (the NIC moves them), and the
node steps at the memcpy speed measured here.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np
import pycodecs

from pycomm.collectives.plan import choose
from pycomm.collectives.spec import make_spec

HERE = Path(__file__).parent
RUNS = HERE / "calibration" / "runs.jsonl"
SPEEDS = HERE / "calibration" / "speeds.json"
CODECS = {"ebq": dict(codec="ebq", error_bound=1e-3, mode="rel"), "int8": {}, "sign": {}}
CLUSTER_ALPHA = 5e-6
SEGMENT_BYTES = 4 << 21  # pycomm's pipeline segment (2^21 float32)
RECURSIVE_BELOW = 512 << 10  # MPICH's allgather(v): recursive doubling below (2^k ranks)
FITTED = ("alpha", "eff", "kappa", "tcp")


def codec_speeds(mib: int = 16) -> dict:
    """Seconds per raw byte on one core of each step the collectives run:
    compress, decompress and decompress_add per codec, ebq_add of two ebq frames, the finite
    min/max pass of ebq's agreement, a float32 add and memcpy (the node steps). The best of 15:
    one core's speed, whatever else runs; the emulator's sharing is the fit's kappa."""
    x = np.random.default_rng(0).laplace(0, 1e-3, mib << 18).astype(np.float32)
    out = np.empty_like(x)

    def best(call) -> float:
        times = []
        for _ in range(15):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        return min(times) / x.nbytes

    speeds = {}
    for name, kw in CODECS.items():
        kw = {"codec": name, **kw}
        frame = pycodecs.compress(x, **kw)
        speeds[name] = dict(
            c=best(lambda: pycodecs.compress(x, **kw)),  # noqa: B023
            d=best(lambda: pycodecs.decompress(frame, out=out)),  # noqa: B023
            da=best(lambda: pycodecs.decompress_add(frame, out=out)),  # noqa: B023
            ratio=x.nbytes / len(frame),
        )
    frame = pycodecs.compress(x, **{"codec": "ebq", **CODECS["ebq"]})
    speeds["ebq"]["sum"] = best(lambda: pycodecs.ebq_add(frame, frame))
    speeds["ebq"]["stats"] = best(lambda: pycodecs.finite_stats(x, 0.0))
    speeds["add"] = best(lambda: np.add(x, out, out=out))
    speeds["memcpy"] = best(lambda: np.copyto(out, x))
    return speeds


def measure_speeds(path: Path) -> dict:
    """codec_speeds, written to path with the load it ran at (the fit reads that file)."""
    load = os.getloadavg()[0]
    speeds = codec_speeds()
    record = dict(cores=os.cpu_count() or 1, load=round(load, 2), speeds=speeds)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return record


@dataclass(frozen=True)
class Counts:
    """One rank's share of a collective, before any machine figure."""

    rounds: float = 0.0  #: message steps, one after another
    link: float = 0.0  #: bytes through the busiest node's link, each way
    stack: float = 0.0  #: bytes sent plus received through the network stack
    local: float = 0.0  #: bytes sent plus received by the hierarchy's node steps
    work: float = 0.0  #: single-core seconds of codec work and sums
    segments: int = 1  #: pipeline segments: the link of one overlaps the CPU of the next

    def __add__(self, other: Counts) -> Counts:
        pairs = zip(astuple(self)[:-1], astuple(other)[:-1], strict=True)
        return Counts(*(a + b for a, b in pairs), max(self.segments, other.segments))

    def times(self, k: float) -> Counts:
        return Counts(*(a * k for a in astuple(self)[:-1]), self.segments)


def crossing_distances(n: int, per: int) -> list[int]:
    """The partner distances 1, 2, 4, ... < n of a recursive exchange on n ranks that leave
    a node of per consecutive ranks (per a power of 2)."""
    return [1 << i for i in range(max(0, math.ceil(math.log2(n)))) if 1 << i >= per]


def scatter(n: int, nodes: int, frames: float) -> Counts:
    """frames_scatter: this rank's chunk frames (frames bytes in all) to their owners."""
    per = n // nodes
    return Counts(rounds=n - 1, link=per * (n - per) / n * frames, stack=2 * (n - 1) / n * frames)


def allgather(n: int, nodes: int, each: float, sized: bool) -> Counts:
    """allgather_frames of one frame of each bytes per rank (sized: sizes gathered first)."""
    if n == 2:
        return Counts(rounds=1, link=each if nodes == 2 else 0.0, stack=2 * each)
    sizes = Counts(rounds=math.ceil(math.log2(n))) if sized else Counts()
    per = n // nodes
    if n * each < RECURSIVE_BELOW and n & (n - 1) == 0:
        dist = crossing_distances(n, per)
        frames = Counts(rounds=math.log2(n), link=per * sum(dist) * each)
    else:  # a ring: each node's one outgoing edge carries every frame but one
        frames = Counts(rounds=n - 1, link=(n - 1) * each if nodes > 1 else 0.0)
    return sizes + frames + Counts(stack=2 * (n - 1) * each)


def mpi_allreduce(n: int, nodes: int, b: float, sp: dict) -> Counts:
    """MPICH's MPI_Allreduce of b bytes: recursive halving then doubling (distance 1 first)."""
    if n <= 1:
        return Counts()
    per = n // nodes
    link = 2 * per * sum(b / (2 * d) for d in crossing_distances(n, per))
    return Counts(
        rounds=2 * math.ceil(math.log2(n)),
        link=link,
        stack=4 * (n - 1) / n * b,
        work=(n - 1) / n * b * sp["add"],
    )


def growth(n: int, g: tuple[float, float]) -> float:
    """How many times wider ebq's reduced frames are than one rank's, on n ranks."""
    return g[0] + g[1] * math.log2(max(n, 2))


def flat(alg: str, codec: str, n: int, nodes: int, b: float, sp: dict, g, ratio=None) -> Counts:
    """One flat compressed allreduce of b bytes per rank on n ranks in nodes nodes (ratio: the
    codec's on these data, else the one in sp)."""
    if n <= 1:
        return Counts()
    s = sp[codec]
    r = ratio or s["ratio"]
    segments = max(1, math.ceil(b / SEGMENT_BYTES))
    seg = b / segments
    if alg == "ring":
        wire = scatter(n, nodes, seg / r) + allgather(n, nodes, seg / r * growth(n, g) / n, True)
        work = seg * (s["c"] + s["d"]) + (n - 1) / n * seg * s["sum"]
    elif alg == "twophase":
        wire = scatter(n, nodes, seg / r) + allgather(n, nodes, seg / r / n, codec == "ebq")
        work = seg * (s["c"] * (1 + 1 / n) + s["da"] + s["d"])
    elif alg == "allgather" and codec == "ebq":
        wire = allgather(n, nodes, seg / r, True)
        work = seg * (s["c"] + s["d"] + (n - 1) * s["sum"])
    elif alg == "allgather":
        wire = allgather(n, nodes, seg / r, False)
        work = seg * (s["c"] + n * s["da"])
    else:
        raise ValueError(alg)
    return (wire + Counts(work=work, segments=segments)).times(segments)


def leader_algorithm(codec: str, leaders: int, b: float) -> str:
    """The flat algorithm pycomm runs between nodes for b bytes of float32 (plan.choose)."""
    options = {k: v for k, v in CODECS[codec].items() if k != "codec"}
    return choose(make_spec(codec, **options), leaders, int(b // 4))


def agreement(codec: str, n: int, b: float, sp: dict) -> Counts:
    """What every pycomm call does first: one small allreduce of the settings (and of ebq's
    input range, after a pass over the input)."""
    work = b * sp[codec]["stats"] if "stats" in sp[codec] else 0.0
    return Counts(rounds=math.ceil(math.log2(max(n, 2))), work=work)


def counts_of(variant: str, n: int, nodes: int, b: float, sp: dict, g, ratio=None) -> Counts:
    """The counts of a variant ('mpi', 'ebq ring', 'int8 hierarchy', ...) on n ranks in nodes
    nodes, b bytes of float32 per rank."""
    if variant == "mpi":
        return mpi_allreduce(n, nodes, b, sp)
    codec, alg = variant.split()
    if alg != "hierarchy":
        return agreement(codec, n, b, sp) + flat(alg, codec, n, nodes, b, sp, g, ratio)
    per = n // nodes
    wide = 2 if codec == "ebq" else 1  # ebq's node sum is float64
    share = (per - 1) / per
    node = Counts(  # reduce-scatter (pairwise, per-1 steps) and allgather (a ring)
        rounds=2 * (per - 1),
        local=2 * share * b * (wide + 1),
        work=share * b * wide * sp["add"] + (wide - 1) * b * sp["memcpy"],
    )
    alg = leader_algorithm(codec, nodes, b / per)
    between = flat(alg, codec, nodes, nodes, b / per, sp, g, ratio)  # k slices share the link
    return agreement(codec, n, b, sp) + node + Counts(link=(per - 1) * between.link) + between


def stretch(n: int, cores: int) -> float:
    """How much slower a rank's CPU work and waits are when n busy-polling ranks share cores."""
    return max(1.0, n / cores)


def pipelined(wire: float, cpu: float, k: int) -> float:
    """Seconds of k equal segments when the wire time of one overlaps the CPU time of the
    next: the first segment's both, then the slower of the two for each further one."""
    return (wire + cpu) / k + (k - 1) / k * max(wire, cpu)


def emulated_time(c: Counts, params: dict, n: int, gbit: float, cores: int) -> float:
    """Seconds of counts c on the emulator: n ranks on cores cores, links of gbit Gbit/s."""
    s = stretch(n, cores)
    beta = params["eff"] * 8 / (gbit * 1e9)
    cpu = c.work * params["kappa"] + (c.stack + c.local) * params["tcp"]
    return c.rounds * params["alpha"] * s + pipelined(c.link * beta, cpu * s, c.segments)


def cluster_time(c: Counts, gbit: float, eff: float, sp: dict) -> float:
    """Seconds of counts c on a cluster: one core per rank, the NIC moving network bytes."""
    beta = eff * 8 / (gbit * 1e9)
    cpu = c.work + c.local / 2 * sp["memcpy"]
    return c.rounds * CLUSTER_ALPHA + pipelined(c.link * beta, cpu, c.segments)


def load_runs(path: Path) -> list[dict]:
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


def print_speeds(record: dict) -> None:
    sp = record["speeds"]
    print(f"codec speeds, one core ({record['cores']} cores, load {record['load']:.2f}):")
    for name in CODECS:
        s = sp[name]
        extra = f", ebq_add {1e-9 / s['sum']:.2f}" if "sum" in s else ""
        print(
            f"  {name:<5} compress {1e-9 / s['c']:.2f} GB/s, decompress {1e-9 / s['d']:.2f}, "
            f"decompress_add {1e-9 / s['da']:.2f}{extra}, ratio {s['ratio']:.2f}"
        )
    print(f"  add {1e-9 / sp['add']:.2f} GB/s, memcpy {1e-9 / sp['memcpy']:.2f} GB/s")


def report(runs: list[dict], errs: np.ndarray, held: np.ndarray) -> None:
    print(
        "\nmodel against measured (emulator; measured: the median of the repeats, spread: their "
        "slowest over fastest; held out: fitted without the point's configuration):"
    )
    print(
        f"{'ranks':>5} {'nodes':>5} {'variant':<16} {'measured s':>10} {'spread':>7} "
        f"{'model s':>8} {'error':>7} {'held out':>8}  loads"
    )
    for r, e, h in zip(runs, errs, held, strict=True):
        loads = " ".join(f"{x:.2f}" for x in r["loads"])
        print(
            f"{r['ranks']:>5} {r['nodes']:>5} {r['variant']:<16} {r['seconds']:>10.3f} "
            f"{r['spread']:>+7.0%} {r['seconds'] * (1 + e):>8.3f} {e:>+7.0%} {h:>+8.0%}  {loads}"
        )
    for label, x in (("in-sample", errs), ("held out", held)):
        a = np.abs(x)
        print(
            f"{label}: {int(np.sum(a <= 0.25))} of {len(a)} within 25%, worst {a.max():.0%}, "
            f"median {np.median(a):.0%}"
        )
    spread = np.array([r["spread"] for r in runs])
    print(f"repeats' spread: median {np.median(spread):.0%}, largest {spread.max():.0%}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", default=str(RUNS))
    p.add_argument("--speeds", default=str(SPEEDS), help="the codec speeds' file")
    p.add_argument(
        "--measure-speeds", action="store_true", help="measure them here into --speeds, exit"
    )
    p.add_argument("--mib", type=float, default=100, help="MiB per rank for the predictions")
    p.add_argument("--plot", default=str(HERE / "perf_model.png"))
    args = p.parse_args()
    if args.measure_speeds:
        print_speeds(measure_speeds(Path(args.speeds)))
        return
    record = json.loads(Path(args.speeds).read_text())
    sp, cores = record["speeds"], record["cores"]
    print_speeds(record)
    repeats = load_runs(Path(args.runs))
    runs = merge_repeats(repeats)
    g = fit_growth(runs)
    params = fit(runs, sp, g, cores)
    print(
        f"fit on {len(runs)} emulated points ({len(repeats)} runs; {cores} cores): alpha "
        f"{params['alpha'] * 1e6:.0f} µs per step (times ranks/cores), link efficiency "
        f"{1 / params['eff']:.2f} of the rate, CPU work x{params['kappa']:.2f} and TCP at "
        f"{1e-9 / params['tcp']:.2f} GB/s (both times ranks/cores), ebq growth "
        f"{g[0]:.3f} + {g[1]:.3f}·log2 N"
    )
    errs, held = errors(params, runs, sp, g, cores), held_out_errors(runs, sp, cores)
    report(runs, errs, held)
    measured = np.array([r["seconds"] for r in runs])
    fitted = (measured, measured * (1 + errs), measured * (1 + held))
    predict(sp, g, params["eff"], args.mib * 2**20, Path(args.plot), fitted)


def plot_fit(ax, measured, model, held) -> None:
    """Model against measured seconds on the emulator, with the ±25% band."""
    lo, hi = min(measured) / 1.5, max(measured) * 1.5
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    for f in (0.75, 1.25):
        ax.plot([lo, hi], [lo * f, hi * f], color="grey", lw=0.6, ls="--")
    ax.scatter(measured, model, s=14, label="fitted on all points")
    ax.scatter(measured, held, s=14, marker="x", label="its configuration held out")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title("emulator: model against measured (±25%)")
    ax.set_xlabel("measured seconds (median of repeats)")
    ax.set_ylabel("model seconds")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def predict(sp, g, eff, b, plot: Path, fitted: tuple) -> None:
    """Cluster predictions: one core per rank, 8 ranks per node for the hierarchy; the plot
    shows them beside fitted (measured and model seconds, and the held-out ones)."""
    ranks = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    rates = [10, 25, 100, 200, 400]
    lines = {
        "MPI_Allreduce": ("mpi", False),
        "ebq ring": ("ebq ring", False),
        "int8 twophase": ("int8 twophase", False),
        "sign twophase": ("sign twophase", False),
        "int8 allgather": ("int8 allgather", False),
        "ebq hierarchy (8/node)": ("ebq hierarchy", True),
        "int8 hierarchy (8/node)": ("int8 hierarchy", True),
    }

    def t(variant, n, hier, gbit):
        nodes = max(1, n // 8) if hier else n
        return cluster_time(counts_of(variant, n, nodes, b, sp, g), gbit, eff, sp)

    print(f"\npredicted seconds per allreduce of {b / 2**20:.0f} MiB per rank (cluster):")
    for gbit in rates:
        print(f"  {gbit} Gbit/s")
        print("    " + f"{'ranks':<24}" + "".join(f"{n:>8}" for n in ranks))
        for label, (variant, hier) in lines.items():
            row = "".join(f"{t(variant, n, hier, gbit):>8.3f}" for n in ranks)
            print(f"    {label:<24}{row}")
    print("\nwhere compression stops paying (at 1024 ranks: the link rate above which")
    print("MPI_Allreduce is faster):")
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

    fig, axes = plt.subplots(1, 4, figsize=(20, 4.5), sharey=False)
    plot_fit(axes[0], *fitted)
    for ax, gbit in zip(axes[1:], (10, 100, 400), strict=True):
        for label, (variant, hier) in lines.items():
            ax.plot(ranks, [t(variant, n, hier, gbit) for n in ranks], marker=".", label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{gbit} Gbit/s per rank, {b / 2**20:.0f} MiB per rank")
        ax.set_xlabel("ranks")
        ax.set_ylabel("seconds per allreduce (model)")
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(plot, dpi=110)
    print(f"\nplot: {plot}")


if __name__ == "__main__":
    main()
