"""The node hierarchy: ranks of a node sum over shared memory uncompressed, the compressed
allreduce runs between nodes, then each node shares the result.

A node's link is shared by its ranks, while its ranks share memory: compressing traffic that
never leaves the node costs CPU and saves nothing. In order:
1. every rank adds its residual to its input (sent exactly); float32 is summed in float64 and
   rounded once per node (the rounding ``bound.node_bound`` counts);
2. when every node holds as many ranks (k), the node reduce-scatters: local rank i holds slice
   i of the node's sum and runs the flat algorithm ``plan.choose`` picks (ring, twophase or
   allgather) with local rank i of every other node, with its worker and server error feedback
   for that slice; the node then allgathers the slices. Otherwise the node reduces onto its
   leader, the leaders run the flat algorithm on the whole sum, and the node broadcasts;
3. every rank holds the bits the compressed collectives decoded.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from pycomm.collectives.buffers import chunk_bounds
from pycomm.collectives.engine import Engine
from pycomm.collectives.nodes import Layout
from pycomm.collectives.plan import choose, make, run_segments
from pycomm.collectives.spec import CodecSpec
from pycomm.collectives.stats import CommStats


def allreduce(
    eng: Engine,
    layout: Layout,
    a: np.ndarray,
    res: np.ndarray,
    err: np.ndarray | None,
    spec: CodecSpec,
    kw: dict,
    segment: int,
    stats: CommStats,
    feedback=None,
) -> None:
    """The sum of every rank's a (plus err, which is emptied) into res, on every rank."""
    node, leaders = layout.node, layout.leaders
    local = node.Get_size() - 1
    if err is not None:
        a = a + err
        err[...] = 0
    wide = spec.caps.exact_sum and a.dtype == np.float32
    send = a.astype(np.float64) if wide else a
    if layout.peers != MPI.COMM_NULL:
        _sliced(eng, layout, send, res, err, spec, kw, segment, stats, feedback)
        return
    total = np.empty_like(send) if layout.is_leader else None
    eng.wait([node.Ireduce(send, total, op=MPI.SUM, root=0)], "the node's reduce")
    stats.local_bytes += send.nbytes * (local if layout.is_leader else 1)
    if layout.is_leader:
        total = total.astype(a.dtype) if wide else total
        n = leaders.Get_size()
        name = choose(spec, n, a.size, dtype=a.dtype, segment=segment)
        alg = make(name, eng, leaders, kw, spec.caps.exact_sum, stats, feedback)
        segments = chunk_bounds(a.size, -(-a.size // max(1, int(segment))))
        run_segments(eng, alg, total, res, err, segments, stats)
    eng.wait([node.Ibcast(res, root=0)], "the node's broadcast")
    stats.local_bytes += res.nbytes * (local if layout.is_leader else 1)


def _sliced(eng, layout: Layout, send, res, err, spec, kw, segment, stats, feedback) -> None:
    """Step 2 with one slice per local rank (every node holds as many ranks)."""
    node, peers = layout.node, layout.peers
    k, i = node.Get_size(), node.Get_rank()
    bounds = chunk_bounds(res.size, k)
    counts = np.array([hi - lo for lo, hi in bounds], dtype=np.int64)
    displs = np.array([lo for lo, _ in bounds], dtype=np.int64)
    lo, hi = bounds[i]
    part = np.empty(hi - lo, send.dtype)
    eng.wait([node.Ireduce_scatter(send, part, counts, op=MPI.SUM)], "the node's reduce-scatter")
    part = part.astype(res.dtype) if part.dtype != res.dtype else part
    mine = None if err is None else err[lo:hi]
    fb = None if feedback is None else feedback.part(lo, hi)
    n = peers.Get_size()
    name = choose(spec, n, part.size, dtype=part.dtype, segment=segment)
    alg = make(name, eng, peers, kw, spec.caps.exact_sum, stats, fb)
    segments = chunk_bounds(part.size, max(1, -(-part.size // max(1, int(segment)))))
    run_segments(eng, alg, part, res[lo:hi], mine, segments, stats)
    req = node.Iallgatherv(MPI.IN_PLACE, [res, (counts, displs)])
    eng.wait([req], "the node's allgather")
    moved = (send.nbytes + res.nbytes) * (k - 1) // k  # what leaves and enters this rank
    stats.local_bytes += 2 * moved
