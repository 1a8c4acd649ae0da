"""Cluster predictions: one core per rank, 8 ranks per node for the hierarchy; the rate above
which each compressed allreduce stops beating MPI_Allreduce; the plot of both beside the fit."""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path

from .counts import counts_of
from .timing import cluster_time

RANKS = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
RATES = [10, 25, 100, 200, 400]
PLOTTED_RATES = (10, 100, 400)
CROSSOVER_RANKS = 1024
#: label: (variant, whether it runs 8 ranks per node)
LINES = {
    "MPI_Allreduce": ("mpi", False),
    "ebq ring": ("ebq ring", False),
    "int8 twophase": ("int8 twophase", False),
    "sign twophase": ("sign twophase", False),
    "int8 allgather": ("int8 allgather", False),
    "ebq hierarchy (8/node)": ("ebq hierarchy", True),
    "int8 hierarchy (8/node)": ("int8 hierarchy", True),
}


def cluster_seconds(variant, n, hier, gbit, *, b, sp, g, eff) -> float:
    """One allreduce of b bytes per rank on n ranks, one per node or 8 per node (hier)."""
    nodes = max(1, n // 8) if hier else n
    return cluster_time(counts_of(variant, n, nodes, b, sp, g), gbit, eff, sp)


def predict(sp, g, eff, b, plot: Path, fitted: tuple) -> None:
    """Print the predictions and the crossovers, and plot them beside fitted (measured and
    model seconds, and the held-out ones)."""
    t = partial(cluster_seconds, b=b, sp=sp, g=g, eff=eff)
    print_predictions(t, b)
    print_crossovers(t)
    plot_predictions(t, b, plot, fitted)


def print_predictions(t, b: float) -> None:
    print(f"\npredicted seconds per allreduce of {b / 2**20:.0f} MiB per rank (cluster):")
    for gbit in RATES:
        print(f"  {gbit} Gbit/s")
        print("    " + f"{'ranks':<24}" + "".join(f"{n:>8}" for n in RANKS))
        for label, (variant, hier) in LINES.items():
            row = "".join(f"{t(variant, n, hier, gbit):>8.3f}" for n in RANKS)
            print(f"    {label:<24}{row}")


def print_crossovers(t) -> None:
    """Bisect, in log space, the link rate where each line meets MPI_Allreduce."""
    n = CROSSOVER_RANKS
    print(f"\nwhere compression stops paying (at {n} ranks: the link rate above which")
    print("MPI_Allreduce is faster):")
    for label, (variant, hier) in list(LINES.items())[1:]:
        lo, hi = 0.1, 10_000.0
        if t(variant, n, hier, hi) < t("mpi", n, False, hi):
            print(f"  {label:<24} pays at every rate up to {hi:.0f} Gbit/s")
            continue
        for _ in range(60):
            mid = math.sqrt(lo * hi)
            if t(variant, n, hier, mid) < t("mpi", n, False, mid):
                lo = mid
            else:
                hi = mid
        print(f"  {label:<24} {lo:8.1f} Gbit/s")


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


def plot_predictions(t, b: float, plot: Path, fitted: tuple) -> None:
    """The fit, then the predictions at three rates, side by side in one image."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(20, 4.5), sharey=False)
    plot_fit(axes[0], *fitted)
    for ax, gbit in zip(axes[1:], PLOTTED_RATES, strict=True):
        for label, (variant, hier) in LINES.items():
            ax.plot(RANKS, [t(variant, n, hier, gbit) for n in RANKS], marker=".", label=label)
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
