"""Compressed reduce-scatter: rank r receives block r of the reduced array."""

from __future__ import annotations

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives._arrays import as_array, check_reducible, output_like
from pycomm.collectives._channel import Private, Request, channel, private_comm, submit
from pycomm.collectives._reduce import first_frames, plain_allreduce, reduction_kwargs, ring_reduce
from pycomm.collectives._spec import CodecSpec, make_spec


def reduce_scatter(
    x: object,
    comm: MPI.Comm | Private | None = None,
    codec: str | CodecSpec | None = "none",
    *,
    op: str = "sum",
    out: object | None = None,
    **params: object,
) -> np.ndarray:
    """Reduce x (size N*m) over the N ranks; rank r gets elements [r*m, (r+1)*m) of the result.

    The bound of ``allreduce`` holds for each block. Returns ``out`` or a new array of m.
    """
    spec = make_spec(codec, **params)
    a = as_array(x)
    check_reducible(a)
    comm = private_comm(comm)
    size, rank = comm.Get_size(), comm.Get_rank()
    if a.size % size:
        raise ValueError(f"reduce_scatter needs a size divisible by {size} ranks, got {a.size}")
    m = a.size // size
    res = output_like(a, out, m)
    kw = reduction_kwargs(a, comm, spec, op, "reduce_scatter")
    if kw is None:
        full = np.empty_like(a)
        plain_allreduce(a, full, comm, op, wide=spec.codec == "ebq")
        res[...] = full[rank * m : (rank + 1) * m]
        return res
    # The ring leaves chunk (r + 1) % N on rank r: rotate the blocks so that it is block r.
    rotated = np.concatenate([a[(size - 1) * m :], a[: (size - 1) * m]]) if size > 1 else a
    frames = first_frames(rotated, kw, size, rank)
    pycodecs.decompress(ring_reduce(comm, frames, rotated, kw), out=res)
    if op == "mean":
        np.divide(res, size, out=res)
    return res


def ireduce_scatter(
    x: object, comm: MPI.Comm | None = None, codec: str | CodecSpec | None = "none", **kwargs
) -> Request:
    """Non-blocking reduce_scatter on the communicator's communication thread."""
    return submit(channel(comm), lambda c: reduce_scatter(x, Private(c), codec, **kwargs))
