"""Compression at scale: bytes really moved (CommStats), the two-phase quantizer allreduce and
its error feedback, the node hierarchy. Prints "scale: passed" on rank 0."""

from __future__ import annotations

import os
import pickle
import sys

import numpy as np
from _check import COMM, QUANTIZERS, RANK, SIZE, everyone, params, same_everywhere

import pycomm
from pycomm.collectives import plan
from pycomm.collectives.spec import make_spec


def check_stats() -> None:
    """sent/recv count what really crossed to other ranks; frame_bytes only this rank's frames."""
    x = np.random.default_rng(RANK).standard_normal(10_000 + 7 * RANK).astype(np.float32)
    stats = pycomm.CommStats()
    pycomm.allgather(x[:10_000], codec="int8", stats=stats)
    frames = everyone(np.array([stats.frame_bytes]))[:, 0]
    assert stats.sent_bytes == frames[RANK] * (SIZE - 1), stats
    assert stats.recv_bytes == frames.sum() - frames[RANK], (stats, frames)
    stats = pycomm.CommStats()
    y = x[:10_000].copy()
    pycomm.bcast(y, root=SIZE - 1, codec="int8", stats=stats)
    root = RANK == SIZE - 1
    assert stats.sent_bytes == (stats.frame_bytes * (SIZE - 1) if root else 0), stats
    assert stats.recv_bytes == (0 if root else stats.frame_bytes), stats
    n = 1 << 16
    stats = pycomm.CommStats()
    pycomm.allreduce(x[:n] if x.size >= n else np.ones(n, np.float32), stats=stats)
    ring = 2 * (SIZE - 1) * n * 4 // SIZE
    assert (stats.sent_bytes, stats.recv_bytes) == (ring, ring), stats
    stats = pycomm.CommStats()
    pycomm.allreduce(np.ones(n, np.float32), codec="ebq", error_bound=1e-3, stats=stats)
    totals = everyone(np.array([stats.sent_bytes, stats.recv_bytes]))
    assert totals[:, 0].sum() == totals[:, 1].sum(), totals  # what is sent is received
    assert (stats.sent_bytes > 0) == (SIZE > 1), stats
    if SIZE > 1:  # ebq's reduce-scatter sends each chunk's first frame to its owner, never a sum
        same = np.random.default_rng(0).standard_normal(SIZE << 14).astype(np.float32)
        stats = pycomm.CommStats()  # equal inputs: rank j's frame of chunk r is everyone's
        pycomm.reduce_scatter(same, codec="ebq", error_bound=1e-3, mode="rel", stats=stats)
        assert stats.recv_bytes % (SIZE - 1) == 0, stats
        own = stats.recv_bytes // (SIZE - 1)
        assert stats.sent_bytes == stats.frame_bytes - own, stats
    n = SIZE * 3 * 1000  # three segments of equal size, each split evenly: what choose weighs
    for algorithm in plan.FIXED if SIZE > 2 else ():
        stats = pycomm.CommStats()
        y = np.random.default_rng(RANK).standard_normal(n).astype(np.float32)
        pycomm.allreduce(y, codec="int8", algorithm=algorithm, segment=n // 3, stats=stats)
        mean = everyone(np.array([stats.sent_bytes]))[:, 0].mean()
        want = plan.exchange(algorithm, make_spec("int8"), SIZE, n, "float32", n // 3)[0]
        assert mean == want, (algorithm, mean, want)


def check_twophase() -> None:
    """Identical bits for every quantizer, odd sizes, fewer elements than ranks, empty."""
    for codec in ("raw", *QUANTIZERS):
        for n in (0, 1, SIZE - 1, SIZE + 1, 1001, 40_003):
            x = np.random.default_rng(RANK + n).standard_normal(n).astype(np.float32)
            fb = pycomm.ErrorFeedback(np.zeros(n, np.float32))
            for residual in (None, fb):
                y = pycomm.allreduce(
                    x, codec=codec, algorithm="twophase", residual=residual, **params(codec)
                )
                same_everywhere(y, f"twophase {codec} n={n}")
                exact = everyone(x).astype(np.float64).sum(0)
                if codec == "raw":
                    assert np.allclose(y, exact, rtol=1e-5, atol=1e-5), codec
    x = np.arange(10 * SIZE, dtype=np.float32) + RANK
    got = pycomm.reduce_scatter(x, codec="int8", op="sum")
    exact = everyone(x).astype(np.float64).sum(0)[RANK * 10 : (RANK + 1) * 10]
    assert np.allclose(got, exact, rtol=0.02, atol=0.02 * np.abs(exact).max()), (got, exact)


def check_feedback_no_drift() -> None:
    """Repeating one allreduce with error feedback: what the results miss of T times the exact
    sum is exactly what the worker and server residuals hold, so their mean converges to it."""
    n, steps = 50_000, 40
    x = np.random.default_rng(7 + RANK).standard_normal(n).astype(np.float32)
    exact = everyone(x).astype(np.float64).sum(0)
    for codec in ("int8", "sign", "int4"):
        fb = pycomm.ErrorFeedback(np.zeros(n, np.float32))
        total = np.zeros(n)
        for _ in range(steps):
            y = pycomm.allreduce(x, codec=codec, algorithm="twophase", residual=fb, segment=20_000)
            total += y
        once = pycomm.allreduce(x, codec=codec, algorithm="twophase")
        server = np.zeros(n)
        for (lo, hi), r in fb.server.items():
            server[lo:hi] += r
        held = everyone(fb.worker).astype(np.float64).sum(0) + COMM.allreduce(server)
        scale = np.abs(exact).max()
        gap = np.abs(total + held - steps * exact).max()
        assert gap <= 1e-5 * steps * scale, f"{codec}: drift {gap}"
        with_ef = np.sqrt(np.mean((total / steps - exact) ** 2))  # rms errors
        without = np.sqrt(np.mean((once - exact) ** 2))
        assert with_ef < 0.25 * without, f"{codec}: EF mean off by {with_ef}, without {without}"
        back = pickle.loads(pickle.dumps(fb))
        assert np.array_equal(back.worker, fb.worker) and back.server.keys() == fb.server.keys()
        assert all(np.array_equal(back.server[k], v) for k, v in fb.server.items())


def check_hierarchy(layout: str) -> None:
    """Emulated nodes (``MPIUCC_NODE``, layout "2,2" = two nodes of two ranks): identical bits,
    the ebq bound, network bytes only on the ranks that compress (every rank, one slice each,
    when the nodes are alike; else the leaders), error feedback."""
    nodes = [int(k) for k in layout.split(",")]
    assert sum(nodes) == SIZE, f"layout {layout} is not of {SIZE} ranks"
    node = int(np.searchsorted(np.cumsum(nodes), RANK, side="right"))
    os.environ["MPIUCC_NODE"] = f"node{node}"
    comm = COMM.Dup()  # a fresh communicator: its layout is found on first use
    leader = RANK in np.cumsum([0, *nodes[:-1]])
    sliced = len(set(nodes)) == 1  # every local rank runs the compressed part on one slice
    for n, algorithm in ((100_003, "auto"), (1001, "hierarchy"), (1, "hierarchy")):
        x = np.random.default_rng(RANK + n).standard_normal(n).astype(np.float32)
        x[: n // 3] *= 1e3
        allx = everyone(x).astype(np.float64)
        for op, mode, bound in (("sum", "abs", 0.1), ("mean", "rel", 1e-4), ("sum", "rms", 1e-3)):
            stats = pycomm.CommStats()
            kw = dict(error_bound=bound, mode=mode, op=op, algorithm=algorithm, stats=stats)
            y = pycomm.allreduce(x, comm, "ebq", **kw)
            same_everywhere(y, f"hierarchy {layout} ebq n={n} {op} {mode}")
            exact = allx.sum(0) / (SIZE if op == "mean" else 1)
            span = allx.max() - allx.min()
            rms = np.sqrt((allx**2).mean(1)).max()
            limit = {"abs": bound, "rel": bound * span, "rms": bound * rms * (1 + 1e-9)}[mode]
            err = np.abs(y - exact).max()
            assert err <= limit, f"hierarchy {layout} ebq n={n} {op} {mode}: {err} > {limit}"
            assert (stats.local_bytes > 0) == (nodes[node] > 1), stats
            assert n < 100 or stats.frame_bytes < stats.raw_bytes, stats
            if not (leader or sliced):  # the node's traffic stays on the node
                assert stats.sent_bytes == stats.recv_bytes == 0, stats
    n = 100_003
    for codec in ("int8", "sign", "fp16"):
        x = np.random.default_rng(RANK).standard_normal(n).astype(np.float32)
        fb = pycomm.ErrorFeedback(np.zeros(n, np.float32))
        for _ in range(3):
            y = pycomm.allreduce(x, comm, codec, residual=fb, op="mean", **params(codec))
            same_everywhere(y, f"hierarchy {layout} {codec}")
        kept = np.abs(fb.worker).max() > 0
        assert kept == (leader or sliced), f"{codec}: residual on the compressing ranks only"
    comm.Free()
    del os.environ["MPIUCC_NODE"]


CHECKS = {
    "stats": check_stats,
    "twophase": check_twophase,
    "feedback": check_feedback_no_drift,
}


def main() -> None:
    with pycomm.abort_on_error():  # a failed check on one rank ends every rank
        run(sys.argv[1:] or list(CHECKS))


def run(names: list[str]) -> None:
    for name in names:
        if name.startswith("hierarchy="):
            check_hierarchy(name.split("=", 1)[1])
        else:
            CHECKS[name]()
    COMM.Barrier()
    if RANK == 0:
        print("scale: passed on", SIZE, "ranks")


if __name__ == "__main__":
    main()
