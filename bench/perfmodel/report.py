"""The printed tables: the codec speeds, the fitted parameters, and model against measured."""

from __future__ import annotations

import numpy as np

from .speeds import CODECS


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


def print_fit(params: dict, g: tuple[float, float], points: int, runs: int, cores: int) -> None:
    print(
        f"fit on {points} emulated points ({runs} runs; {cores} cores): alpha "
        f"{params['alpha'] * 1e6:.0f} µs per step (times ranks/cores), link efficiency "
        f"{1 / params['eff']:.2f} of the rate, CPU work x{params['kappa']:.2f} and TCP at "
        f"{1e-9 / params['tcp']:.2f} GB/s (both times ranks/cores), ebq growth "
        f"{g[0]:.3f} + {g[1]:.3f}·log2 N"
    )


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
