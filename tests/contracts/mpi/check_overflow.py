"""Proofs that cover overflow: every choice a bounded allreduce relies on (raw in the dtype,
a cast, ebq's per-rank bound), first or kept, keeps the bound on data near the dtype's
largest value.

Every rank runs the same derandomized hypothesis test in lockstep (no shrinking), as
``check_matrix``. Each example warms its key with ``warm`` calls of ordinary data (so that
auto keeps a pick, and the compiled path may take the key), then reduces data of magnitude
``scale`` times the dtype's largest: the result must keep the contract (``contract``; an
exact sum beyond the dtype may be infinite) with identical bits on every rank.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np
from contract import Bound, Sent, check_reduction, digest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from mpi4py import MPI

import pycomm

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
EXAMPLES = 40
pycomm.set_timeout(30.0)


@dataclass(frozen=True)
class Case:
    codec: str  # "auto" or "ebq"
    mode: str
    bound: float  # relative to the largest value for mode "abs"
    dtype: str
    op: str
    size: int
    scale: float  # of the dtype's largest value
    warm: int
    repeat: int  # calls of the large data (auto tries its candidates on them)
    seed: int

    def args(self) -> tuple[str, dict, float]:
        b = self.bound * float(np.finfo(self.dtype).max) if self.mode == "abs" else self.bound
        if self.codec == "auto":
            return f"auto:{self.mode}:{b!r}", {}, b
        return "ebq", {"error_bound": b, "mode": self.mode}, b

    def data(self, rank: int, big: bool) -> np.ndarray:
        rng = np.random.default_rng([self.seed, rank, big])
        x = rng.standard_normal(self.size)
        if big:
            sign = rng.choice([-1.0, 1.0], self.size) if self.seed % 2 else 1.0
            x = sign * rng.uniform(0.5, 1.0, self.size) * self.scale * np.finfo(self.dtype).max
        return x.astype(self.dtype)


@st.composite
def cases(draw) -> Case:
    return Case(
        draw(st.sampled_from(["auto", "auto", "ebq"])),
        draw(st.sampled_from(["abs", "rel", "rms"])),
        draw(st.sampled_from([1e-1, 1e-2, 1e-3])),
        draw(st.sampled_from(["float32", "float64"])),
        draw(st.sampled_from(["sum", "mean"])),
        draw(st.sampled_from([1, 2, 7, 64, 1025])),
        draw(st.sampled_from([1.0, 0.9, 0.6, 1.0 / SIZE, 0.3, 1e-3])),
        draw(st.sampled_from([0, 24])),
        draw(st.sampled_from([1, 12])),
        draw(st.integers(0, 2**31 - 1)),
    )  # fmt: skip


def run_case(case: Case) -> tuple[list[str], str]:
    codec, params, b = case.args()
    for _ in range(case.warm):
        pycomm.allreduce(case.data(RANK, False), COMM, codec, op=case.op, **params)
    xs = [case.data(r, True) for r in range(SIZE)]
    sent = Sent(xs)
    bound = Bound(case.mode, b, sent, case.op, case.dtype)
    fails, digests = [], []
    for call in range(case.repeat):
        got = pycomm.allreduce(xs[RANK], COMM, codec, op=case.op, **params)
        bad = check_reduction(got, sent, case.op, bound, case.dtype)
        fails += [] if bad is None else [f"call {call + 1}: {bad}"]
        digests.append(digest(got))
    return fails[:1], "/".join(digests)


FAILED: list[tuple[Case, list]] = []
RUN = [0]


@settings(
    derandomize=True, database=None, phases=[Phase.explicit, Phase.generate], deadline=None,
    max_examples=EXAMPLES, suppress_health_check=list(HealthCheck),
)  # fmt: skip
@given(case=cases())
# a key kept raw under an rms bound, then a mean of values near 3e38 (was: inf)
@example(case=Case("auto", "rms", 1e-3, "float32", "mean", 64, 0.9, 40, 1, 1))
# an absolute bound of 1e37 with values near 2e38: no cast may be tried (was: inf, bf16)
@example(case=Case("auto", "abs", 1e37 / 3.4028235e38, "float32", "mean", 4096, 0.6, 0, 30, 3))
@example(case=Case("auto", "abs", 1e37 / 3.4028235e38, "float32", "mean", 4096, 0.6, 30, 12, 4))
def test_overflow(case: Case) -> None:
    RUN[0] += 1
    try:
        fails, dig = run_case(case)
    except Exception as exc:  # noqa: BLE001  (a raise is a failed example)
        fails, dig = [f"raised {type(exc).__name__}: {exc}"], "raised"
    verdicts = COMM.allgather((fails, dig))
    found = [f"rank {r}: {f}" for r, (fs, _) in enumerate(verdicts) for f in fs]
    if len({d for _, d in verdicts}) > 1:
        found.append("results differ across ranks")
    if found:
        FAILED.append((case, found))
        if RANK == 0:
            print(f"FAIL {case}\n  " + "\n  ".join(found), flush=True)


if __name__ == "__main__":
    t0 = time.perf_counter()
    test_overflow()
    if RANK == 0:
        print(f"overflow: {SIZE} ranks, {RUN[0]} examples, {len(FAILED)} failed, "
              f"{time.perf_counter() - t0:.1f} s", flush=True)  # fmt: skip
        if not FAILED:
            print("overflow: passed")
    sys.exit(1 if FAILED else 0)
