"""Importing pycomm.distributed on one rank alone makes no MPI call the others must join."""

from __future__ import annotations

import os
import sys
import time

from mpi4py import MPI

WORLD = MPI.COMM_WORLD
RANK = WORLD.Get_rank()


def _abort_on_error(*exc_info: object) -> None:
    sys.__excepthook__(*exc_info)
    sys.stderr.flush()
    WORLD.Abort(1)


sys.excepthook = _abort_on_error
for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
    os.environ.pop(var, None)

if RANK == 1:
    import pycomm.distributed  # noqa: F401

    WORLD.send("imported", dest=0, tag=11)
if RANK == 0:
    # Rank 0 makes no MPI call but this probe: an import that needed it would never return.
    deadline = time.monotonic() + 30
    while not WORLD.iprobe(source=1, tag=11):
        assert time.monotonic() < deadline, "rank 1's import waits for the other ranks"
        time.sleep(0.01)
    assert WORLD.recv(source=1, tag=11) == "imported"
    import pycomm.distributed  # noqa: F401, E402

WORLD.Barrier()
assert "MASTER_ADDR" not in os.environ and "RANK" not in os.environ
if RANK == 0:
    print("import without MPI calls: passed", flush=True)
