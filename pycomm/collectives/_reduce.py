"""The core shared by allreduce and reduce_scatter: settings, the error budget, the ring."""

from __future__ import annotations

import numpy as np
import pycodecs
from mpi4py import MPI

from pycomm.collectives._arrays import chunk_bounds, finite_min_max
from pycomm.collectives._bound import rank_bound
from pycomm.collectives._channel import agree
from pycomm.collectives._frames import ring_reduce_scatter
from pycomm.collectives._spec import CodecSpec
from pycomm.collectives._wait import wait

OPS = ("sum", "mean")


def reduction_kwargs(
    a: np.ndarray, comm: MPI.Comm, spec: CodecSpec, op: str, what: str, *extra: object
) -> dict | None:
    """Agree on the settings across ranks; the pycodecs keywords, or None to go uncompressed.

    For ebq the per-rank bound comes from the error budget, so that the reduced result keeps
    the user's bound; None also when the dtype cannot meet that bound (see ``_bound``).
    """
    if op not in OPS:
        raise ValueError(f"op must be one of {OPS}, not {op!r}")
    sig = spec.signature(what, a.dtype.str, a.size, op, *extra)
    label = f"{what} {spec.codec} {a.dtype} x{a.size} {op}"
    if spec.codec != "ebq":
        agree(comm, sig, label)
        return spec.codec_kwargs() if spec.compressed and a.size else None
    lo, hi = finite_min_max(a)
    hi, neg_lo = agree(comm, sig, label, (hi, -lo))
    bound = spec.error_bound * (hi + neg_lo) if spec.mode == "rel" else spec.error_bound
    e = rank_bound(bound, comm.Get_size(), max(abs(hi), abs(neg_lo)), op == "mean", a.dtype)
    if e is None or a.size == 0:
        return None
    return dict(spec.codec_kwargs(), error_bound=e, mode="abs")


def compress(x: np.ndarray, kw: dict, residual: np.ndarray | None = None) -> bytearray:
    """One frame of x, with error feedback into residual when one is given."""
    if residual is None:
        return pycodecs.compress(x, **kw)
    return pycodecs.compress_ef(x, residual, **kw)


def first_frames(
    part: np.ndarray, kw: dict, size: int, rank: int, residual: np.ndarray | None = None
) -> list:
    """The frames of ``part``'s chunks that a rank makes before the ring starts."""
    bounds = chunk_bounds(part.size, size)
    if kw["codec"] == "ebq":  # every chunk once: the ring adds frames, never raw data
        res = [None] * size if residual is None else [residual[lo:hi] for lo, hi in bounds]
        return [compress(part[lo:hi], kw, r) for (lo, hi), r in zip(bounds, res, strict=True)]
    if residual is not None:
        raise ValueError("error feedback with a quantizer needs the allgather algorithm")
    frames: list = [None] * size  # quantizers: the chunk sent first; the ring adds raw chunks
    lo, hi = bounds[rank]
    frames[rank] = compress(part[lo:hi], kw)
    return frames


def ring_reduce(comm: MPI.Comm, frames: list, part: np.ndarray, kw: dict) -> object:
    """Reduce-scatter chunk frames around the ring; the frame of chunk (rank + 1) % size.

    ebq frames are added exactly in the index domain; quantizer frames are decoded, the
    rank's raw chunk added, and compressed again.
    """
    bounds = chunk_bounds(part.size, comm.Get_size())

    def combine(received: bytearray, idx: int) -> object:
        if kw["codec"] == "ebq":
            return pycodecs.ebq_add(received, frames[idx])
        acc = pycodecs.decompress(received)
        with np.errstate(invalid="ignore", over="ignore"):  # NaN/Inf propagate, by policy
            acc += part[bounds[idx][0] : bounds[idx][1]]
        return pycodecs.compress(acc, **kw)

    return ring_reduce_scatter(comm, frames, combine)


def same_buffer(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two flat views are the very same memory (in-place operation)."""
    return a.ctypes.data == b.ctypes.data and a.nbytes == b.nbytes


def plain_allreduce(a: np.ndarray, res: np.ndarray, comm: MPI.Comm, op: str, wide: bool) -> None:
    """Uncompressed allreduce into res; ``wide`` sums float32 in float64 and rounds once."""
    size = comm.Get_size()
    if not same_buffer(a, res) and np.shares_memory(a, res):
        raise ValueError("out overlaps x without being x itself")
    if wide and a.dtype == np.float32:
        acc = a.astype(np.float64)
        wait(comm, comm.Iallreduce(MPI.IN_PLACE, acc, op=MPI.SUM), "allreduce")
        if op == "mean":
            acc /= size
        res[...] = acc
        return
    req = comm.Iallreduce(MPI.IN_PLACE if same_buffer(a, res) else a, res, op=MPI.SUM)
    wait(comm, req, "allreduce")
    if op == "mean":
        np.divide(res, size, out=res)
