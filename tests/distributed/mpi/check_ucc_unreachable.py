"""A UCC team whose members UCX cannot connect fails loudly (run with UCX_TLS=sm,self).

UCC's context is made per team here (no world context), so UCX needs a transport that reports
peer failures, and sm,self has none. UCC then reports the team made and its collectives done
with their buffers untouched; pycomm's check at team creation must raise on every rank, and
the group must go on working once put back on MPI.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from _dist import assert_equal, init, passed

RANK, SIZE, _ = init()
group = dist.new_group(backend="mpiucc")
group.set_collectives("ucc")
for _ in range(2):  # the team is not kept: a second call fails alike
    t = torch.full((4,), float(RANK + 1))
    try:
        dist.all_reduce(t, group=group)
    except RuntimeError as exc:
        assert "moves no data" in str(exc) and "UCX_TLS" in str(exc), exc
    else:
        raise AssertionError(f"all_reduce on an unconnected UCC team returned {t}")
group.set_collectives("mpi")
t = torch.full((4,), float(RANK + 1))
dist.all_reduce(t, group=group)
assert_equal(t, torch.full((4,), float(SIZE * (SIZE + 1) // 2)), "all_reduce back on MPI")
passed("unreachable ucc team")
