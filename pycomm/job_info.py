"""``mpiucc info`` under a launcher: one report for the job, written by rank 0.

Every rank collects its own ``info()``; the rows that may differ between ranks
(``info.PER_RANK``: host, cores, UCC, the compiled path, the codecs' SIMD level) are gathered
to rank 0, which prints them once where every rank agrees and per rank where they differ.
"""

from __future__ import annotations

import sys
from typing import Any

from pycomm.info import rank_rows


def gather(found: dict[str, Any]) -> bool:
    """Add ``found["ranks"]`` (each rank's per-rank rows, by rank) on rank 0 of a job of
    several ranks, and return whether this process should print. A single process, or one
    without MPI, prints its own report."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or found.get("mpi_vendor") is None or not mpi.Is_initialized():
        return True
    comm = mpi.COMM_WORLD
    if comm.size == 1:
        return True
    rows = comm.gather(rank_rows(found), root=0)
    if comm.rank != 0:
        return False
    found["ranks"] = rows
    return True
