"""The collectives as UCC collectives on a group's UCC team (``MPIUCC_COLLECTIVES=ucc``).

Each function takes a ``UccComm`` and the arguments of its namesake in ``ops`` and returns the
same ``(requests, finish, keep)``; the requests are ``pycomm.ucc`` collectives, which the
engine waits for as it waits for MPI's (their ``Test`` progresses UCC's context). Reductions
follow ``ops`` exactly: float16 and bfloat16 reduced in float32 and rounded once, AVG a SUM
divided after, so that where the sums are exact the bits equal MPI's. What UCC is not given
here runs on MPI, decided from arguments every rank shares (dtype, op, sizes): bool tensors
and empty tensors where UCC reduces or broadcasts, uneven reduce_scatter lists and
allreduce_coalesced. gather and scatter move bytes (any dtype, uneven sizes: UCC's gatherv
and scatterv skip empty blocks), so they always run on UCC: their sizes are not shared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from pycomm.collectives.engine import Engine
from pycomm.distributed import ops
from pycomm.distributed._buffers import (
    AVG,
    RedOpType,
    as_bytes,
    copy_chunks,
    finish_reduction,
    gather_layout,
    mpi_op,
    output_buffer,
    reduction_tensor,
)
from pycomm.distributed.work import Started
from pycomm.ucc import _ucc
from pycomm.ucc.team import team_of

_TYPES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.int16: "int16",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.uint16: "uint16",
    torch.uint32: "uint32",
    torch.uint64: "uint64",
    torch.float16: "float32",  # reduced in float32, as ops does
    torch.bfloat16: "float32",
}
_OPS = {
    int(RedOpType.SUM): "sum",
    AVG: "sum",
    int(RedOpType.PRODUCT): "prod",
    int(RedOpType.MIN): "min",
    int(RedOpType.MAX): "max",
    int(RedOpType.BAND): "band",
    int(RedOpType.BOR): "bor",
    int(RedOpType.BXOR): "bxor",
}


#: The collectives sent through UCC (by their names here), bool and empty tensors aside.
ON_UCC = (
    "allreduce",
    "broadcast",
    "reduce",
    "allgather",
    "allgather_into_tensor",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "gather",
    "scatter",
    "alltoall",
    "alltoall_single",
    "barrier",
)


class UccComm:
    """A group's communicator with its UCC team, made on the first UCC collective."""

    __slots__ = ("comm", "engine")

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.comm = engine.comm

    def team(self, what: str) -> Any:
        """The team; made now if this is the group's first UCC collective, ``what``."""
        return team_of(self.engine, what=what)

    def size(self) -> int:
        return self.comm.Get_size()

    def rank(self) -> int:
        return self.comm.Get_rank()


def _on_ucc(tensors: list[torch.Tensor], op: int | None = None) -> bool:
    """Whether UCC reduces (op given) or moves these tensors: a type it has, none empty."""
    if op is not None and op not in _OPS:
        return False
    return all(t.dtype in _TYPES and t.numel() for t in tensors)


def _chain(steps: list[Callable[[], None]]) -> Callable[[], None] | None:
    return ops._chain(steps)


def _u64(values: list[int]) -> np.ndarray:
    return np.asarray(values, dtype=np.uint64)


def _displs(counts: list[int]) -> np.ndarray:
    return _u64([sum(counts[:i]) for i in range(len(counts))])


def allreduce(uc: UccComm, tensors: list[torch.Tensor], op: int) -> Started:
    if not _on_ucc(tensors, op):
        return ops.allreduce(uc.comm, tensors, op)
    team, size = uc.team("allreduce"), uc.size()
    reqs, steps, keep = [], [], []
    for t in tensors:
        mpi_op(op, t.dtype)  # the same argument errors as on MPI
        work = reduction_tensor(t)
        reqs.append(
            _ucc.post(
                team,
                "allreduce",
                dst=work.data_ptr(),
                dst_count=work.numel(),
                dst_dtype=_TYPES[work.dtype],
                op=_OPS[op],
                in_place=True,
            )
        )
        steps.append(finish_reduction(t, work, op, size))
        keep.append(work)
    return reqs, _chain(steps), keep


def allreduce_coalesced(uc: UccComm, tensors: list[torch.Tensor], op: int) -> Started:
    return ops.allreduce_coalesced(uc.comm, tensors, op)


def broadcast(uc: UccComm, tensors: list[torch.Tensor], root: int) -> Started:
    if not _on_ucc(tensors):
        return ops.broadcast(uc.comm, tensors, root)
    team, is_root = uc.team("broadcast"), uc.rank() == root
    reqs, back = [], []
    for t in tensors:
        buf, copy = output_buffer(t, keep_values=is_root)
        reqs.append(_bytes(team, "bcast", buf, root=root))
        if copy and not is_root:
            back.append((t, buf))
    return reqs, ops._copy_back(back) if back else None, back


def _bytes(team: Any, coll: str, buf: torch.Tensor, **kw: Any) -> Any:
    """A collective on buf's bytes as its only buffer (bcast)."""
    nbytes = buf.numel() * buf.element_size()
    return _ucc.post(team, coll, src=buf.data_ptr(), src_count=nbytes, **kw)


def reduce(uc: UccComm, tensors: list[torch.Tensor], root: int, op: int) -> Started:
    if not _on_ucc(tensors, op):
        return ops.reduce(uc.comm, tensors, root, op)
    team, is_root, size = uc.team("reduce"), uc.rank() == root, uc.size()
    reqs, steps, keep = [], [], []
    for t in tensors:
        mpi_op(op, t.dtype)
        work = reduction_tensor(t)
        dtype = _TYPES[work.dtype]
        if is_root:  # in place: the root's own contribution is in dst
            where = {"dst": work.data_ptr(), "dst_count": work.numel(), "dst_dtype": dtype}
            steps.append(finish_reduction(t, work, op, size))
        else:  # UCC reads src only; t keeps its values, as on MPI
            where = {"src": work.data_ptr(), "src_count": work.numel(), "src_dtype": dtype}
        reqs.append(_ucc.post(team, "reduce", op=_OPS[op], root=root, in_place=is_root, **where))
        keep.append(work)
    return reqs, _chain(steps), keep


def allgather(
    uc: UccComm, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor]
) -> Started:
    if not _on_ucc(inputs):
        return ops.allgather(uc.comm, outputs, inputs)
    team, size = uc.team("allgather"), uc.size()
    reqs, steps, keep = [], [], []
    for outs, t in zip(outputs, inputs, strict=True):
        src, sizes, flat = gather_layout(outs, t)
        if all(n == src.numel() for n in sizes):
            req = _ucc.post(
                team,
                "allgather",
                src=src.data_ptr(),
                src_count=src.numel(),
                dst=flat.data_ptr(),
                dst_count=src.numel() * size,
            )
        else:
            req = _ucc.post(
                team,
                "allgatherv",
                src=src.data_ptr(),
                src_count=src.numel(),
                dst=flat.data_ptr(),
                dst_counts=_u64(sizes),
                dst_displs=_displs(sizes),
            )
        reqs.append(req)
        steps.append(_chunks_into(flat, outs, sizes))
        keep += [src, flat]
    return reqs, _chain(steps), keep


def allgather_into_tensor(
    uc: UccComm, outputs: list[torch.Tensor], inputs: list[torch.Tensor]
) -> Started:
    if not _on_ucc(inputs):
        return ops.allgather_into_tensor(uc.comm, outputs, inputs)
    team, size, rank = uc.team("all_gather_into_tensor"), uc.size(), uc.rank()
    reqs, back, keep = [], [], []
    for out, t in zip(outputs, inputs, strict=True):
        if out.numel() != t.numel() * size:
            raise ValueError(
                f"all_gather_into_tensor: output has {out.numel()} elements, "
                f"expected {size} x {t.numel()}"
            )
        buf, copy = output_buffer(out, keep_values=False)
        src = ops._gather_source(t, buf, rank)
        nbytes = t.numel() * t.element_size()
        reqs.append(
            _ucc.post(
                team,
                "allgather",
                src=0 if src is None else src.data_ptr(),
                src_count=nbytes,
                dst=buf.data_ptr(),
                dst_count=nbytes * size,
                in_place=src is None,
            )
        )
        if copy:
            back.append((out, buf))
        keep += [src, buf]
    return reqs, ops._copy_back(back) if back else None, keep


def reduce_scatter(
    uc: UccComm, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], op: int
) -> Started:
    even = all(len({x.numel() for x in ins}) == 1 for ins in inputs)
    if not even or not _on_ucc(outputs, op):
        return ops.reduce_scatter(uc.comm, outputs, inputs, op)
    flats = [torch.cat([x.reshape(-1) for x in ins]) for ins in inputs]
    return reduce_scatter_tensor(uc, outputs, flats, op)


def reduce_scatter_tensor(
    uc: UccComm, outputs: list[torch.Tensor], inputs: list[torch.Tensor], op: int
) -> Started:
    if not _on_ucc(outputs, op):
        return ops.reduce_scatter_tensor(uc.comm, outputs, inputs, op)
    team, size = uc.team("reduce_scatter_tensor"), uc.size()
    reqs, steps, keep = [], [], []
    for out, t in zip(outputs, inputs, strict=True):
        if t.numel() != out.numel() * size:
            raise ValueError(
                f"reduce_scatter_tensor: input has {t.numel()} elements, "
                f"expected {size} x {out.numel()}"
            )
        mpi_op(op, out.dtype)
        src = reduction_tensor(t)
        work = ops._reduction_output(out)
        dtype = _TYPES[work.dtype]
        reqs.append(
            _ucc.post(
                team,
                "reduce_scatter",
                src=src.data_ptr(),
                src_count=src.numel(),
                src_dtype=dtype,
                dst=work.data_ptr(),
                dst_count=work.numel(),
                dst_dtype=dtype,
                op=_OPS[op],
            )
        )
        steps.append(finish_reduction(out, work, op, size))
        keep += [src, work]
    return reqs, _chain(steps), keep


def gather(
    uc: UccComm, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], root: int
) -> Started:
    """A gatherv of bytes, each rank's byte count sent to the root first (a UCC gather of one
    uint64 per rank): UCC fails a receive smaller than its message, and a root whose post fails
    there never receives the blocks of the ranks after it, whose sends then wait until the
    group's timeout and break it. Knowing the counts, the root receives every block whole,
    then raises where one is larger than its output (MPI's truncation error at the root; the
    other ranks complete, the outputs are left as they were, the group goes on)."""
    team, rank = uc.team("gather"), uc.rank()
    src = as_bytes(inputs[0])
    mine = _u64([src.numel()])
    counts = _u64([0] * uc.size())
    req = _ucc.post(team, "gather", src=mine.ctypes.data, src_count=1, src_dtype="uint64",
                    dst=counts.ctypes.data, dst_count=counts.size, dst_dtype="uint64",
                    root=root)  # fmt: skip
    uc.engine.wait([req], "gather")
    if rank != root:
        req = _ucc.post(team, "gatherv", src=src.data_ptr(), src_count=src.numel(), root=root)
        return [req], None, src
    outs = outputs[0]
    src, sizes, flat = gather_layout(outs, inputs[0])
    sent = [int(n) for n in counts]
    over = [r for r, (n, fits) in enumerate(zip(sent, sizes, strict=True)) if n > fits]
    if over:  # received whole into scratch, then refused
        flat, sizes = torch.empty(sum(sent), dtype=torch.uint8), sent
    req = _ucc.post(
        team,
        "gatherv",
        src=src.data_ptr(),
        src_count=src.numel(),
        dst=flat.data_ptr(),
        dst_counts=_u64(sizes),
        dst_displs=_displs(sizes),
        root=root,
    )
    finish = _too_large(over, sent, outs) if over else _chunks_into(flat, outs, sizes)
    return [req], finish, (src, flat)


def _too_large(over: list[int], sent: list[int], outs: list[torch.Tensor]) -> Callable[[], None]:
    def refuse() -> None:
        r = over[0]
        holds = outs[r].numel() * outs[r].element_size()
        raise ValueError(
            f"gather: rank {r} sent {sent[r]} bytes, more than the root's output {r} holds "
            f"({holds} bytes); the outputs are left as they were"
        )

    return refuse


def scatter(
    uc: UccComm, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], root: int
) -> Started:
    team, out = uc.team("scatter"), outputs[0]
    buf, copy = output_buffer(out, keep_values=False)
    dst = as_bytes(buf)
    into = {"dst": dst.data_ptr(), "dst_count": dst.numel(), "root": root}
    finish = ops._copy_back([(out, buf)]) if copy else None
    if uc.rank() != root:
        return [_ucc.post(team, "scatterv", **into)], finish, buf
    ins = inputs[0]
    flat = torch.cat([as_bytes(x) for x in ins])
    sizes = [x.numel() * x.element_size() for x in ins]
    req = _ucc.post(
        team, "scatterv", src=flat.data_ptr(), src_counts=_u64(sizes), src_displs=_displs(sizes),
        **into,
    )  # fmt: skip
    return [req], finish, (buf, flat)


def alltoall(uc: UccComm, outputs: list[torch.Tensor], inputs: list[torch.Tensor]) -> Started:
    send_sizes = [x.numel() * x.element_size() for x in inputs]
    recv_sizes = [x.numel() * x.element_size() for x in outputs]
    if not sum(send_sizes) or not sum(recv_sizes):
        return ops.alltoall(uc.comm, outputs, inputs)
    sflat = torch.cat([as_bytes(x) for x in inputs])
    rflat = torch.empty(sum(recv_sizes), dtype=torch.uint8)
    req = _alltoallv(uc.team("all_to_all"), sflat, send_sizes, rflat, recv_sizes)
    return [req], _chunks_into(rflat, outputs, recv_sizes), (sflat, rflat)


def alltoall_single(
    uc: UccComm,
    out: torch.Tensor,
    t: torch.Tensor,
    out_splits: list[int],
    in_splits: list[int],
) -> Started:
    size = uc.size()
    send_sizes = ops._split_bytes(t, in_splits, size)
    recv_sizes = ops._split_bytes(out, out_splits, size)
    if not sum(send_sizes) or not sum(recv_sizes):
        return ops.alltoall_single(uc.comm, out, t, out_splits, in_splits)
    src = as_bytes(t)
    buf, copy = output_buffer(out, keep_values=False)
    if len(set(send_sizes)) == 1 and send_sizes == recv_sizes:
        req = _ucc.post(
            uc.team("all_to_all_single"),
            "alltoall",
            src=src.data_ptr(),
            src_count=src.numel(),
            dst=buf.data_ptr(),
            dst_count=src.numel(),
        )
    else:
        dst = buf.view(-1).view(torch.uint8)
        req = _alltoallv(uc.team("all_to_all_single"), src, send_sizes, dst, recv_sizes)
    return [req], ops._copy_back([(out, buf)]) if copy else None, (src, buf)


def _alltoallv(
    team: Any, src: torch.Tensor, send: list[int], dst: torch.Tensor, recv: list[int]
) -> Any:
    return _ucc.post(
        team,
        "alltoallv",
        src=src.data_ptr(),
        src_counts=_u64(send),
        src_displs=_displs(send),
        dst=dst.data_ptr(),
        dst_counts=_u64(recv),
        dst_displs=_displs(recv),
    )


def barrier(uc: UccComm) -> Started:
    return [_ucc.post(uc.team("barrier"), "barrier")], None, None


def _chunks_into(
    flat: torch.Tensor, outs: list[torch.Tensor], sizes: list[int]
) -> Callable[[], None]:
    return lambda: copy_chunks(flat, outs, sizes)
