"""allreduce and reduce_scatter: identical results everywhere, the final bound, non-blocking."""

from __future__ import annotations

import numpy as np
from _check import COMM, QUANTIZERS, RANK, SIZE, everyone, max_error, params, same_everywhere

import pycomm

SIZES = [0, 1, 3, SIZE - 1, 1000, 40_001]


def data(kind: str, n: int, dtype) -> np.ndarray:
    rng = np.random.default_rng(1000 * RANK + n)
    if kind == "normal":
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 3)
    elif kind == "heavy":
        x = rng.standard_t(2, n) * 1e-3
    elif kind == "constant":
        x = np.full(n, 0.125)
    elif kind == "huge":
        x = rng.standard_normal(n) * 1e30
    elif kind == "special":
        x = rng.standard_normal(n)
        x[::7] = 0.0
        x[1::11] = -0.0
        x[2::13] = 1e-40
    return x.astype(dtype)


def check_ebq(n, dtype, op, mode, bound, kind, algorithm) -> None:
    x = data(kind, n, dtype)
    y = pycomm.allreduce(x, codec="ebq", error_bound=bound, mode=mode, op=op, algorithm=algorithm)
    label = f"ebq {dtype.__name__} n={n} {op} {mode} {bound} {kind} {algorithm}"
    same_everywhere(y, label)
    allx = everyone(x).astype(np.float64)
    exact = allx.sum(0) / (SIZE if op == "mean" else 1)
    finite = allx[np.isfinite(allx)]
    span = float(finite.max() - finite.min()) if finite.size else 0.0
    rms = max(
        (np.sqrt(np.mean(r[np.isfinite(r)] ** 2)) if np.isfinite(r).any() else 0.0) for r in allx
    )
    limit = {"abs": bound, "rel": bound * span, "rms": bound * rms * (1 + 1e-9)}[mode]
    rounding = np.abs(exact) * np.finfo(dtype).eps  # the dtype's own rounding floor
    err = np.abs(y.astype(np.float64) - exact)
    assert np.all(err <= np.maximum(limit, rounding)), f"{label}: bound exceeded, max {err.max()}"


def check_quantizer(codec, n, op, algorithm) -> None:
    x = data("normal", n, np.float32)
    y = pycomm.allreduce(x, codec=codec, op=op, algorithm=algorithm, **params(codec))
    same_everywhere(y, f"{codec} n={n} {op} {algorithm}")
    exact = everyone(x).astype(np.float64).sum(0) / (SIZE if op == "mean" else 1)
    assert y.shape == exact.shape
    if n:  # a loose sanity check: quantizers promise no bound
        scale = np.abs(everyone(x)).max() * SIZE
        assert max_error(y, exact) <= scale, f"{codec}: result unrelated to the input"
    if op == "mean":  # exact: the mean is the sum of the same frames divided, bit for bit
        total = pycomm.allreduce(x, codec=codec, algorithm=algorithm, **params(codec))
        assert np.array_equal(y, total / np.float32(SIZE)), f"{codec} {algorithm}: mean != sum/N"


def check_nonblocking() -> None:
    x = data("normal", 5000, np.float32)
    want = pycomm.allreduce(x, codec="ebq", error_bound=1e-3, op="mean")
    req = pycomm.iallreduce(x, codec="ebq", error_bound=1e-3, op="mean")
    got = req.wait(timeout=60)
    assert req.test()
    assert np.array_equal(got, want), "non-blocking result differs from blocking"


def check_error_feedback() -> None:
    """With residuals, sum over steps of the results tracks the sum of inputs (no drift)."""
    n, steps = 20_000, 6
    ef = [("ebq", {"error_bound": 1e-3, "mode": "rel"})] + [(q, params(q)) for q in QUANTIZERS]
    for codec, kw in ef:
        residual = np.zeros(n, np.float32)
        sent = np.zeros(n, np.float64)
        got = np.zeros(n, np.float64)
        stats = pycomm.CommStats()
        for step in range(steps):
            x = np.random.default_rng(100 * step + RANK).standard_normal(n).astype(np.float32)
            y = pycomm.allreduce(x, codec=codec, op="sum", residual=residual, stats=stats, **kw)
            same_everywhere(y, f"EF {codec} step {step}")
            sent += everyone(x).astype(np.float64).sum(0)
            got += y
        # What is still missing is exactly what the residuals hold (up to float rounding).
        missing = everyone(residual).astype(np.float64).sum(0)
        drift = np.max(np.abs(sent - got - missing))
        assert drift <= 1e-3 * np.max(np.abs(sent)), f"EF {codec}: drift {drift}"
        assert stats.calls == steps and stats.frame_bytes < stats.raw_bytes, stats


def check_reduce_scatter() -> None:
    m = 1001
    x = data("normal", m * SIZE, np.float32)
    for codec, kw in (("none", {}), ("ebq", {"error_bound": 1e-4})):
        y = pycomm.reduce_scatter(x, codec=codec, op="sum", **kw)
        exact = everyone(x).astype(np.float64).sum(0)[RANK * m : (RANK + 1) * m]
        bound = kw.get("error_bound", 0.0) + np.abs(exact).max() * 1e-6
        assert max_error(y, exact) <= bound, f"reduce_scatter {codec}"
        req = pycomm.ireduce_scatter(x, codec=codec, op="sum", **kw)
        assert np.array_equal(req.wait(timeout=60), y)
    # A quantizer takes the two-phase exchange's first half, its block decoded into out.
    out = np.full(m, np.nan, np.float32)
    y = pycomm.reduce_scatter(x, codec="int8", out=out)
    inputs = everyone(x).astype(np.float64)  # int8: each rank off by its block's max / 254
    exact = inputs.sum(0)[RANK * m : (RANK + 1) * m]
    assert np.shares_memory(y, out) and max_error(out, exact) <= SIZE * np.abs(inputs).max() / 250
    # Error feedback: what T steps deliver is T times the sum, less what the ranks still hold.
    residual, total, steps = np.zeros_like(x), np.zeros(m), 5
    for _ in range(steps):
        y = pycomm.reduce_scatter(x, codec="ebq", error_bound=1e-2, residual=residual)
        total += y
    assert np.abs(residual).max() > 0, "the residual kept nothing"
    held = everyone(residual).astype(np.float64).sum(0)[RANK * m : (RANK + 1) * m]
    exact = everyone(x).astype(np.float64).sum(0)[RANK * m : (RANK + 1) * m]
    assert max_error(total, steps * exact - held) <= np.abs(exact).max() * steps * 1e-6


def check_mismatch() -> None:
    x = np.ones(100, np.float32)
    bound = 1e-3 if RANK else 2e-3
    try:
        pycomm.allreduce(x, codec="ebq", error_bound=bound)
    except pycomm.SettingsMismatchError:
        pass
    else:
        raise AssertionError("mismatched error bounds were not detected")
    try:
        pycomm.allreduce(np.ones(100 + (RANK == 0), np.float32), codec="none")
    except pycomm.SettingsMismatchError:
        pass
    else:
        raise AssertionError("mismatched sizes were not detected")
    try:  # the segment decides the algorithm (plan.choose): every rank must take the same
        pycomm.allreduce(np.ones(1 << 16, np.float32), codec="int8", segment=1 << (12 + RANK))
    except pycomm.SettingsMismatchError:
        pass
    else:
        raise AssertionError("mismatched segments were not detected")


def main() -> None:
    for dtype in (np.float32, np.float64):
        for n in SIZES:
            for op in ("sum", "mean"):
                check_ebq(n, dtype, op, "abs", 1e-3, "normal", "auto")
    for kind in ("heavy", "constant", "huge", "special"):
        for mode, bound in (("abs", 1e-4), ("rel", 1e-4), ("rms", 1e-3)):
            for algorithm in ("ring", "allgather"):
                check_ebq(40_001, np.float32, "sum", mode, bound, kind, algorithm)
    for codec in ("none", *QUANTIZERS):
        for algorithm in ("twophase", "allgather"):
            for n in (0, 1, 40_001):
                check_quantizer(codec, n, "mean", algorithm)
    check_nonblocking()
    check_error_feedback()
    check_reduce_scatter()
    if SIZE > 1:  # one rank cannot disagree with itself
        check_mismatch()
    COMM.Barrier()
    if RANK == 0:
        print("allreduce checks passed on", SIZE, "ranks")


if __name__ == "__main__":
    main()
