"""The node hierarchy: ranks of a node sum over shared memory uncompressed, the node leaders
run the compressed allreduce among themselves, then each node broadcasts the result.

A node's link is shared by its ranks, while its ranks share memory: compressing traffic that
never leaves the node costs CPU and saves nothing. In order:
1. every rank adds its residual to its input (sent exactly), and the node reduces onto its
   leader (float32 summed in float64 and rounded once: the rounding ``bound.node_bound`` counts);
2. the leaders run the flat algorithm ``plan.choose`` picks for their number (ring, twophase or
   allgather), with the leader's worker and server error feedback;
3. each node broadcasts the leader's result: every rank holds the bits the leaders decoded.
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
    total = np.empty_like(send) if layout.is_leader else None
    eng.wait([node.Ireduce(send, total, op=MPI.SUM, root=0)], "the node's reduce")
    stats.local_bytes += send.nbytes * (local if layout.is_leader else 1)
    if layout.is_leader:
        total = total.astype(a.dtype) if wide else total
        n = leaders.Get_size()
        alg = make(choose(spec, n, a.size), eng, leaders, kw, spec.caps.exact_sum, stats, feedback)
        segments = chunk_bounds(a.size, -(-a.size // max(1, int(segment))))
        run_segments(eng, alg, total, res, err, segments, stats)
    eng.wait([node.Ibcast(res, root=0)], "the node's broadcast")
    stats.local_bytes += res.nbytes * (local if layout.is_leader else 1)
