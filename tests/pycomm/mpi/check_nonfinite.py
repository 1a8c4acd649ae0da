"""NaN and ±Inf in the collectives: every rank gets the same bits, with NaN/Inf where they
arose (codecs/FORMAT.md, "Non-finite values"), and error feedback stays clean."""

from __future__ import annotations

import numpy as np
from _check import COMM, RANK, SIZE, everyone, same_everywhere

import pycomm

CODECS = {
    "none": {},
    "ebq": {"error_bound": 1e-3},
    "ebq-rel": {"error_bound": 1e-3, "mode": "rel"},
    "fp16": {},
    "bf16": {},
    "int8": {},
    "int4": {},
    "sign": {},
    "qsgd": {"levels": 8},
    "topk": {"levels": 8},
}
EXACT = ("none", "ebq", "ebq-rel", "fp16", "bf16")  # the non-finite sums, exactly where they are
BLOCK = 256  # the quantizers' default block: the most a special can spread to, per chunk


def codec_of(name: str) -> tuple[str, dict]:
    return name.split("-")[0], CODECS[name]


def with_specials(n: int, seed: int) -> np.ndarray:
    """Finite data, plus NaN on rank 0, +Inf on rank 1 and -Inf on the last rank at their own
    positions, and +Inf/-Inf on ranks 0/1 at one shared position (which sums to NaN)."""
    x = np.random.default_rng(seed + RANK).standard_normal(n).astype(np.float32)
    if n:
        marks = {0: (n // 3, np.nan), 1: (n // 2, np.inf), SIZE - 1: (n - 1, -np.inf)}
        if RANK in marks:
            x[marks[RANK][0]] = marks[RANK][1]
        if SIZE > 1 and RANK < 2:
            x[n // 5] = np.inf if RANK == 0 else -np.inf
    return x


def check_result(name: str, y: np.ndarray, exact: np.ndarray, label: str) -> None:
    same_everywhere(y, label)
    bad = ~np.isfinite(exact)
    got = ~np.isfinite(y)
    assert got[bad].all(), f"{label}: a NaN/Inf was lost"
    if name in EXACT:
        assert np.array_equal(got, bad), f"{label}: NaN/Inf positions differ"
        assert np.array_equal(np.isnan(y), np.isnan(exact)), f"{label}: NaN positions differ"
        assert np.array_equal(y[bad & ~np.isnan(exact)], exact[bad & ~np.isnan(exact)]), label
    else:
        assert np.count_nonzero(got) <= np.count_nonzero(bad) * 2 * BLOCK, f"{label}: spread"


def check_allreduce(name: str, n: int, algorithm: str, ef: bool) -> None:
    codec, kw = codec_of(name)
    x = with_specials(n, seed=n)
    residual = np.zeros(n, np.float32) if ef else None
    label = f"{name} n={n} {algorithm} ef={ef}"
    y = pycomm.allreduce(x, codec=codec, op="sum", algorithm=algorithm, residual=residual, **kw)
    with np.errstate(invalid="ignore"):
        exact = everyone(x).astype(np.float64).sum(0)
    check_result(name, y, exact, label)
    if ef:
        assert np.isfinite(residual).all(), f"{label}: residual poisoned"
        clean = np.random.default_rng(7 + RANK).standard_normal(n).astype(np.float32)
        y2 = pycomm.allreduce(clean, codec=codec, algorithm=algorithm, residual=residual, **kw)
        same_everywhere(y2, f"{label} next step")
        assert np.isfinite(y2).all(), f"{label}: the step after NaN/Inf is not finite"


def check_reduce_scatter(name: str) -> None:
    codec, kw = codec_of(name)
    m = 2000
    x = with_specials(m * SIZE, seed=3)
    y = pycomm.reduce_scatter(x, codec=codec, op="mean", **kw)
    with np.errstate(invalid="ignore"):
        exact = (everyone(x).astype(np.float64).sum(0) / SIZE)[RANK * m : (RANK + 1) * m]
    bad = ~np.isfinite(exact)
    assert (~np.isfinite(y))[bad].all(), f"reduce_scatter {name}: a NaN/Inf was lost"
    if name in EXACT:
        assert np.array_equal(np.isnan(y), np.isnan(exact)), f"reduce_scatter {name}"


def check_gather_bcast(name: str) -> None:
    codec, kw = codec_of(name)
    if codec == "ebq":
        kw = {"error_bound": 1e-3}
    x = with_specials(999, seed=5)
    rows = pycomm.allgather(x, codec=codec, **kw)
    same_everywhere(rows, f"allgather {name}")
    want = everyone(x)
    assert (~np.isfinite(rows))[~np.isfinite(want)].all(), f"allgather {name}: NaN/Inf lost"
    b = pycomm.bcast(x.copy(), root=SIZE - 1, codec=codec, **kw)
    same_everywhere(b, f"bcast {name}")
    assert (~np.isfinite(b))[~np.isfinite(want[SIZE - 1])].all(), f"bcast {name}"


def check_send_recv(name: str) -> None:
    """Each rank sends to the next one around the ring: NaN/Inf arrive where they were sent."""
    codec, kw = codec_of(name)
    if codec == "ebq":
        kw = {"error_bound": 1e-3}
    x = with_specials(777, seed=9)
    out = np.empty_like(x)
    req = pycomm.isend(x, dest=(RANK + 1) % SIZE, tag=31, codec=codec, **kw)
    pycomm.recv(out, source=(RANK - 1) % SIZE, tag=31, codec=codec, **kw)
    req.wait(timeout=60)
    sent = everyone(x)[(RANK - 1) % SIZE]
    assert (~np.isfinite(out))[~np.isfinite(sent)].all(), f"send/recv {name}: NaN/Inf lost"
    if name in EXACT:
        assert np.array_equal(np.isnan(out), np.isnan(sent)), f"send/recv {name}"


def check_nan_payloads() -> None:
    """NaNs of different sign and payload on different ranks, at the same position."""
    for name in CODECS:
        codec, kw = codec_of(name)
        x = np.ones(3000, np.float32)
        x.view(np.uint32)[10] = 0x7FC00000 + RANK if RANK % 2 else 0xFFC00000 + 3 * RANK
        y = pycomm.allreduce(x, codec=codec, **kw)
        same_everywhere(y, f"{name}: NaN payloads")
        assert np.isnan(y[10]), name


def main() -> None:
    names = list(CODECS)
    for name in names:
        for n in (1, 7, 40_001):
            ring = "ring" if name.startswith("ebq") else "twophase"
            for algorithm in (ring, "allgather"):
                ef = (False, True) if name != "none" else (False,)
                for e in ef:
                    check_allreduce(name, n, algorithm, e)
        check_reduce_scatter(name)
        check_gather_bcast(name)
        check_send_recv(name)
    check_nan_payloads()
    COMM.Barrier()
    if RANK == 0:
        print("non-finite checks passed on", SIZE, "ranks")


if __name__ == "__main__":
    main()
