"""Issue 26's defects, each as the case that broke a contract on the paths added for speed:
tables one rank alone remembers, an invalid argument on a settled path, float64 sums, means
near the largest float, and error feedback's statistics. Run on 2 and 3 ranks."""

from __future__ import annotations

import sys
from fractions import Fraction

import numpy as np
from _check import COMM, RANK, SIZE, everyone, same_everywhere

import pycomm
from pycomm.collectives import auto_state
from pycomm.collectives.engine import engine_of

pycomm.set_timeout(20)  # the old code hung here: fail, do not wait 1800 s


def exact_error(got: np.ndarray, inputs: np.ndarray, mean: bool) -> float:
    """max |got - exact| with the exact sum (or mean) of the rows of inputs in fractions."""
    worst = Fraction(0)
    for j in range(got.size):
        total = sum(Fraction(float(v)) for v in inputs[:, j])
        exact = total / inputs.shape[0] if mean else total
        worst = max(worst, abs(Fraction(float(got[j])) - exact))
    return float(worst)


def settle(x: np.ndarray, codec: str) -> None:
    """Call until auto keeps its decision (raw here: shared memory is fast)."""
    for _ in range(3 * auto_state.CODEC.keep):
        pycomm.allreduce(x, codec=codec)


def check_tables_out_of_step() -> None:
    """Case 2: a key table cleared on one rank alone (point-to-point sends fill it there)."""
    x = np.random.default_rng(RANK).standard_normal(50_000).astype(np.float32)
    settle(x, "auto:rms:1e-2")
    auto_state.MAX_KEYS = 4
    if SIZE > 1:  # rank 0 sends auto frames of new sizes: keys on the sender only
        for n in range(1, 6):
            buf = np.ones(n, np.float32)
            if RANK == 0:
                pycomm.send(buf, 1, codec="auto:rms:1e-2")
            elif RANK == 1:
                pycomm.recv(buf, 0, codec="auto:rms:1e-2")
    engine_of(COMM).observed.keys.clear() if RANK == SIZE - 1 else None  # any divergence
    want = everyone(x).astype(np.float64).sum(0)
    for _ in range(3):
        y = pycomm.allreduce(x, codec="auto:rms:1e-2")
        same_everywhere(y, "tables out of step")
        rms = max(float(np.sqrt(np.mean(v.astype(np.float64) ** 2))) for v in everyone(x))
        assert np.abs(y - want).max() <= 1e-2 * rms
    auto_state.MAX_KEYS = 4096


def check_invalid_argument_on_a_settled_path() -> None:
    """Case 3: after auto:rms settled raw, one rank passes an out= of the wrong size."""
    x = np.random.default_rng(RANK).standard_normal(20_000).astype(np.float32)
    settle(x, "auto:rms:1e-2")
    bad = np.empty(x.size + (RANK == 0), np.float32)
    try:
        pycomm.allreduce(x, codec="auto:rms:1e-2", out=bad)
    except pycomm.PeerArgumentError:
        assert RANK != 0
    except ValueError:
        assert RANK == 0
    else:
        raise AssertionError(f"rank {RANK}: returned data from a call one rank got wrong")
    y = pycomm.allreduce(x, codec="auto:rms:1e-2")  # the ranks are still in step
    same_everywhere(y, "after an invalid argument")


def check_float64_sums() -> None:
    """Case 6: float64 summed in MPI's order rounds where every exact sum is representable."""
    big = 1e16  # a double's spacing there is 2: big + 1 rounds
    roles = [(big, 1.0, -big), (1.0, big, -big), (big, -big, 1.0)]
    x = np.array([roles[j][RANK] if RANK < 3 else 0.0 for j in range(3)] * 5, np.float64)
    inputs = everyone(x)
    for codec in ("ebq", "auto:abs:1e-11"):
        for op in ("sum", "mean"):
            kw = {"error_bound": 1e-11, "mode": "abs"} if codec == "ebq" else {}
            y = pycomm.allreduce(x, codec=codec, op=op, **kw)
            same_everywhere(y, f"float64 {codec} {op}")
            err = exact_error(y, inputs, op == "mean")
            assert err <= 1e-11, f"float64 {codec} {op}: off by {err}"


def check_mean_near_overflow() -> None:
    """Case 7: under a bound, the mean of values near the largest float is finite and within
    it (codec="none" is MPI's own sum, then divided: it overflows as MPI's does)."""
    for dtype in (np.float32, np.float64):
        top = float(np.finfo(dtype).max)
        rng = np.random.default_rng(RANK)
        x = (top * (0.5 + 0.5 * rng.random(33))).astype(dtype)
        inputs = everyone(x)
        cases = [("auto:rel:1e-3", {})]
        for level in ("fast", "dense"):
            cases.append(("ebq", {"error_bound": 1e-3, "mode": "rel", "level": level}))
        for codec, kw in cases:
            y = pycomm.allreduce(x, codec=codec, op="mean", **kw)
            same_everywhere(y, f"mean near overflow {codec}")
            assert np.isfinite(y).all(), f"{dtype.__name__} {codec} {kw}: {y[:3]}"
            bound = 1e-3 * (float(inputs.max()) - float(inputs.min()))
            err = exact_error(y, inputs, mean=True)
            assert err <= bound, f"{dtype.__name__} {codec} {kw}: off by {err} > {bound}"


def check_error_feedback_statistics() -> None:
    """Case 8: with a residual the bound is on x + residual, and so are its statistics: a
    residual that cancels most of x leaves a range far smaller than x's."""
    rng = np.random.default_rng(RANK)
    for mode, level, algorithm in [("rel", "fast", "auto"), ("rms", "dense", "allgather")]:
        x = (1e3 * rng.standard_normal(40_000)).astype(np.float32)
        residual = (-x + 1e-3 * rng.standard_normal(x.size)).astype(np.float32)
        sent = everyone(x.astype(np.float64) + residual)
        kw = {"error_bound": 1e-3, "mode": mode, "level": level}
        y = pycomm.allreduce(x, codec="ebq", residual=residual, algorithm=algorithm, **kw)
        same_everywhere(y, f"error feedback {mode}")
        if mode == "rel":
            scale = float(sent.max() - sent.min())
        else:
            scale = max(float(np.sqrt(np.mean(r**2))) for r in sent)
        err = float(np.abs(y - sent.sum(0)).max())
        assert err <= 1e-3 * scale, f"error feedback {mode}: {err} > {1e-3 * scale}"


def main() -> None:
    checks = [check_mean_near_overflow, check_error_feedback_statistics]
    if SIZE >= 3:  # two ranks' float64 sum is one addition: correctly rounded anyway
        checks.append(check_float64_sums)
    if SIZE > 1:
        checks += [check_tables_out_of_step, check_invalid_argument_on_a_settled_path]
    names = sys.argv[1:]
    for check in checks:
        if not names or check.__name__ in names:
            check()
    COMM.Barrier()
    if RANK == 0:
        print("contracts: passed")


if __name__ == "__main__":
    main()
