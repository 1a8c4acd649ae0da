"""The contract matrix of issue 26, on the ranks and node layout it is launched with.

Every rank runs the same derandomized hypothesis test in lockstep (no shrinking), makes every
rank's inputs from the drawn seed, checks its share of the result against the exact
reference (``contract``) and gathers the verdicts, so that all ranks judge each example alike.
Axes drawn: collective (allreduce mostly; reduce_scatter, allgather, bcast, send/recv),
codec (none, ebq fast/dense abs/rel/rms, auto:abs/rel/rms, every quantizer), algorithm (auto,
each forced one the codec takes, and invalid ones: ValueError on every rank), dtype, op,
error feedback (off, residual array, ErrorFeedback; two calls of one key, the second 1e-6
times smaller, or that minus the residual), data family, size (0, 1, odd, around
``MIN_CHUNK_COUNT`` times 1, the nodes and the ranks) and pipeline segment. Every failing
example is printed from rank 0 and the script exits 1 after the last: one launch reports
every failing cell (it stops early only once a communicator is broken).

``EXAMPLES`` per launch (``CONTRACT_EXAMPLES``; the pytest file passes 300): 7-25 s a
launch on the shared 2-core development machine (seconds in the script's last line).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import numpy as np
from contract import FAMILIES, Bound, Sent, check_reduction, digest, inputs
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from mpi4py import MPI

import pycomm
from pycomm.collectives.plan import MIN_CHUNK_COUNT, SEGMENT_COUNT

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
NODES = len(set(COMM.allgather(os.environ.get("MPIUCC_NODE", "host"))))
EXAMPLES = int(os.environ.get("CONTRACT_EXAMPLES", "60"))
pycomm.set_timeout(30.0)

QUANTIZERS = ("fp16", "bf16", "int8", "int4", "sign", "qsgd", "topk")
CODECS = ("none", "ebq", "auto", *QUANTIZERS)
VALID = {  # the algorithms each kind of codec takes (none: the choice is moot)
    "none": ("auto",),
    "ebq": ("auto", "ring", "allgather", "hierarchy"),
    "auto": ("auto", "ring", "twophase", "allgather"),
    "quantizer": ("auto", "twophase", "allgather", "hierarchy"),
}
INVALID = {"ebq": ("twophase", "bogus"), "auto": ("hierarchy",), "quantizer": ("ring",)}
#: Error feedback: a residual array, or an ErrorFeedback (allreduce only takes that).
EF = {
    "allreduce": ("off", "array", "feedback", "array-cancel", "feedback-cancel"),
    "reduce_scatter": ("off", "array", "array-cancel"),
}
THRESHOLDS = sorted({MIN_CHUNK_COUNT * m + d for m in (1, NODES, SIZE) for d in (-1, 0, 1)})


@dataclass(frozen=True)
class Case:
    collective: str
    codec: str
    mode: str
    bound: float
    level: str
    algorithm: str
    dtype: str
    op: str
    ef: str
    family: str
    size: int
    segment: int
    seed: int

    def second_call(self, xs: list, rs: list) -> list:
        """The second call of a key with feedback: the first's data 1e-6 times smaller
        ("scaled"), or that minus the residual ("cancel": x + r spans far less than x)."""
        small = [x * np.dtype(self.dtype).type(1e-6) for x in xs]
        if self.ef.endswith("cancel"):
            with np.errstate(invalid="ignore", over="ignore"):
                return [s - r for s, r in zip(small, rs, strict=True)]
        return small

    def kind(self) -> str:
        return self.codec if self.codec in ("none", "ebq", "auto") else "quantizer"

    def valid(self) -> bool:
        return self.algorithm in VALID[self.kind()]

    def codec_args(self) -> tuple[str, dict]:
        if self.codec == "auto":
            return f"auto:{self.mode}:{self.bound!r}", {}
        if self.codec == "ebq":
            return "ebq", {"error_bound": self.bound, "mode": self.mode, "level": self.level}
        return self.codec, {}

    def contract(self, sent: Sent, op: str) -> Bound | None:
        if self.codec == "none":
            return Bound("float", None, sent, op, self.dtype)
        if self.codec in ("ebq", "auto"):
            return Bound(self.mode, self.bound, sent, op, self.dtype)
        return None


@st.composite
def cases(draw) -> Case:
    collective = draw(st.sampled_from(["allreduce"] * 6 + ["reduce_scatter", "allgather"]
                                      + ["bcast", "sendrecv"]))  # fmt: skip
    codec = draw(st.sampled_from(CODECS))
    kind = codec if codec in VALID else "quantizer"
    algorithm = "auto"
    if collective == "allreduce":
        algorithm = draw(st.sampled_from(VALID[kind]))
        if kind in INVALID and draw(st.integers(0, 9)) == 0:
            algorithm = draw(st.sampled_from(INVALID[kind]))
    reducing = collective in ("allreduce", "reduce_scatter")
    size = draw(st.one_of(st.sampled_from([0, 1, 2, 3, 7, 31, 257]), st.integers(0, 3000),
                          st.sampled_from(THRESHOLDS)))  # fmt: skip
    segment = draw(st.sampled_from([SEGMENT_COUNT, SEGMENT_COUNT, size // 3 + 1, 4097]))
    return Case(
        collective, codec, draw(st.sampled_from(["abs", "rel", "rms"])),
        draw(st.sampled_from([1e-1, 1e-2, 1e-3, 1e-4, 1e-6])),
        draw(st.sampled_from(["fast", "dense"])),
        algorithm, draw(st.sampled_from(["float32", "float64"])),
        draw(st.sampled_from(["sum", "mean"])) if reducing else "sum",
        draw(st.sampled_from(EF[collective])) if reducing else "off",
        draw(st.sampled_from(FAMILIES)), size, segment, draw(st.integers(0, 2**31 - 1)),
    )  # fmt: skip


def run_case(case: Case) -> tuple[list[str], str]:
    """This rank's failures and its result's digest (the collective's own share only)."""
    codec, params = case.codec_args()
    n = case.size - case.size % SIZE if case.collective == "reduce_scatter" else case.size
    xs = [inputs(case.family, case.seed, r, n, case.dtype) for r in range(SIZE)]
    if not case.valid():
        try:
            pycomm.allreduce(xs[RANK], COMM, codec, algorithm=case.algorithm, **params)
        except ValueError:
            return [], "raised"
        except Exception as exc:  # noqa: BLE001
            return [f"invalid algorithm raised {type(exc).__name__}: {exc}"], "raised"
        return ["invalid algorithm returned data"], "returned"
    if case.collective in ("allreduce", "reduce_scatter"):
        return reduce_case(case, codec, params, xs)
    return spread_case(case, codec, params, xs)


def reduce_case(case: Case, codec: str, params: dict, xs: list) -> tuple[list[str], str]:
    n, fails, digests = xs[0].size, [], []
    store = np.zeros(n, case.dtype) if case.ef != "off" else None
    residual = pycomm.ErrorFeedback(store) if case.ef.startswith("feedback") else store
    for call in range(1 if store is None else 2):
        rs = None if store is None else [np.asarray(r) for r in COMM.allgather(store.copy())]
        ins = xs if call == 0 else case.second_call(xs, rs)
        sent = Sent(ins, rs)
        if case.collective == "allreduce":
            kw = dict(op=case.op, algorithm=case.algorithm, segment=case.segment)
            got = pycomm.allreduce(ins[RANK], COMM, codec, residual=residual, **kw, **params)
            lo, hi = RANK * n // SIZE, (RANK + 1) * n // SIZE
            want_shape, full = (n,), got
        else:
            got = pycomm.reduce_scatter(
                ins[RANK], COMM, codec, op=case.op, residual=residual, **params
            )
            lo, hi = RANK * n // SIZE, (RANK + 1) * n // SIZE
            want_shape, full = (n // SIZE,), np.zeros(n, case.dtype)
            full[lo:hi] = got
        what = f"call {call + 1}: "
        if got.shape != want_shape or got.dtype != np.dtype(case.dtype):
            fails.append(f"{what}shape/dtype {got.shape} {got.dtype}, want {want_shape}")
            continue
        digests.append(digest(got) if case.collective == "allreduce" else "")
        bad = check_reduction(full, sent, case.op, case.contract(sent, case.op), case.dtype, lo, hi)
        if bad:
            fails.append(what + bad)
    return fails, "/".join(digests)


def spread_case(case: Case, codec: str, params: dict, xs: list) -> tuple[list[str], str]:
    """allgather, bcast, send/recv: each frame decoded as sent, within its own rank's bound."""
    n = xs[0].size
    if case.collective == "allgather":
        got = pycomm.allgather(xs[RANK], COMM, codec, **params)
        src, mine, want_shape = (RANK + 1) % SIZE, None, (SIZE, n)
        mine = got[src] if got.shape == want_shape else None
    elif case.collective == "bcast":
        src = case.seed % SIZE
        got = pycomm.bcast(xs[RANK].copy(), src, COMM, codec, **params)
        mine, want_shape = got, (n,)
    else:
        dst, src = (RANK + 1) % SIZE, (RANK - 1) % SIZE
        req = pycomm.isend(xs[RANK], dst, 5, COMM, codec, **params)
        got = pycomm.recv(np.empty(n, case.dtype), src, 5, COMM, codec, **params)
        req.wait()
        mine, want_shape = got, (n,)
    if got.shape != want_shape or got.dtype != np.dtype(case.dtype):
        return [f"shape/dtype {got.shape} {got.dtype}, want {want_shape}"], ""
    sent = Sent([xs[src]])
    bad = check_reduction(mine, sent, "sum", case.contract(sent, "sum"), case.dtype)
    return ([] if bad is None else [f"rank {src}'s data: {bad}"]), (
        "" if case.collective == "sendrecv" else digest(got)
    )


FAILED: list[tuple[Case, list]] = []
RUN = [0]


class Broken(Exception):
    pass


@settings(
    derandomize=True, database=None, phases=[Phase.explicit, Phase.generate], deadline=None,
    max_examples=EXAMPLES, suppress_health_check=list(HealthCheck),
)  # fmt: skip
@given(case=cases())
@example(case=Case("allreduce", "none", "abs", 0, "fast", "auto", "float32", "mean", "off",
                   "near_overflow", 1000, SEGMENT_COUNT, 1))  # fmt: skip
@example(case=Case("allreduce", "ebq", "rel", 1e-3, "dense", "ring", "float32", "mean", "feedback",
                   "near_overflow", MIN_CHUNK_COUNT * SIZE, 5000, 2))  # fmt: skip
@example(case=Case("allreduce", "auto", "rms", 1e-2, "fast", "auto", "float32", "sum",
                   "array-cancel", "normal", 3001, SEGMENT_COUNT, 3))  # fmt: skip
@example(case=Case("allreduce", "ebq", "abs", 1e-3, "fast", "hierarchy", "float64", "sum", "off",
                   "mixed", MIN_CHUNK_COUNT * NODES + 1, SEGMENT_COUNT, 4))  # fmt: skip
@example(case=Case("allreduce", "ebq", "rel", 1e-2, "fast", "auto", "float32", "sum",
                   "feedback-cancel", "normal", 5000, SEGMENT_COUNT, 6))  # fmt: skip
@example(case=Case("allreduce", "int8", "abs", 0, "fast", "twophase", "float32", "mean", "off",
                   "specials", 2049, 700, 5))  # fmt: skip
def test_matrix(case: Case) -> None:
    RUN[0] += 1
    try:
        fails, dig = run_case(case)
    except Exception as exc:  # noqa: BLE001  (a raise is a failed cell; a broken comm ends all)
        fails, dig = [f"raised {type(exc).__name__}: {exc}"], "raised"
    verdicts = COMM.allgather((fails, dig))
    digests = {d for _, d in verdicts}
    found = [f"rank {r}: {f}" for r, (fs, _) in enumerate(verdicts) for f in fs]
    if len(digests) > 1:
        found.append(f"results differ across ranks: {[d for _, d in verdicts]}")
    if found:
        FAILED.append((case, found))
        if RANK == 0:
            print(f"FAIL {case}\n  " + "\n  ".join(found), flush=True)
    if any("CommTimeout" in f or "broken" in f for f in found):
        raise Broken("the communicator is broken: the rest of the matrix cannot run")


if __name__ == "__main__":
    t0 = time.perf_counter()
    try:
        test_matrix()
    except Broken as exc:
        if RANK == 0:
            print(f"stopped: {exc}", flush=True)
    seconds = time.perf_counter() - t0
    if RANK == 0:
        layout = os.environ.get("MPIUCC_NODE") and f"{NODES} nodes" or "one node"
        print(f"matrix: {SIZE} ranks, {layout}, {RUN[0]} examples, "
              f"{len(FAILED)} failed, {seconds:.1f} s", flush=True)  # fmt: skip
        if not FAILED:
            print("matrix: passed")
    sys.exit(1 if FAILED else 0)
