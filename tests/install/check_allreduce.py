"""A 2-rank compressed pycomm.allreduce from the installed wheel: identical bits on every rank,
within the bound of the exact mean."""

import numpy as np
from _where import check_installed
from mpi4py import MPI

import pycomm

check_installed()
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
x = np.random.default_rng(rank).standard_normal(100_000).astype(np.float32)
with pycomm.abort_on_error(comm):
    y = pycomm.allreduce(x, comm=comm, codec="ebq", error_bound=1e-4, mode="rel", op="mean")
everyone = np.stack(comm.allgather(x)).astype(np.float64)
exact = everyone.mean(0)
limit = 1e-4 * float(everyone.max() - everyone.min())
assert np.max(np.abs(y - exact)) <= limit, np.max(np.abs(y - exact))
assert all(np.array_equal(y, other) for other in comm.allgather(y)), "ranks differ"
if rank == 0:
    print(f"allreduce on {size} ranks: passed")
