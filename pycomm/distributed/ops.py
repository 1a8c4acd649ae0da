"""The collectives as non-blocking MPI calls on a group's communicator.

Each function posts its MPI operations and returns ``(requests, finish, keep)``: the engine
waits for the requests, then runs ``finish`` (copy results back, divide for AVG), and keeps
``keep`` (temporary buffers) alive until then. Reductions of float16 and bfloat16 run in
float32 and are rounded once at the end: every rank receives the same float32 bits from MPI,
so every rank gets the same half-precision bits too. Data that is only moved (broadcast,
gathers, scatters, all-to-all) travels as bytes, in any dtype. CUDA and non-contiguous tensors
are staged through contiguous host copies. The backend has checked the arguments before
(``checks``: dtypes, list lengths, element counts).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from mpi4py import MPI

from pycomm.distributed._buffers import (
    as_bytes,
    copy_chunks,
    displacements,
    finish_reduction,
    gather_layout,
    mpi_op,
    output_buffer,
    reduction_tensor,
    spec,
    typed_spec,
)
from pycomm.distributed.work import Started


def _chain(steps: list[Callable[[], None]]) -> Callable[[], None] | None:
    if not steps:
        return None

    def run() -> None:
        for step in steps:
            step()

    return run


def _copy_back(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> Callable[[], None]:
    def run() -> None:
        for dst, src in pairs:
            dst.copy_(src)

    return run


def allreduce(comm: MPI.Intracomm, tensors: list[torch.Tensor], op: int) -> Started:
    reqs, steps, keep = [], [], []
    size = comm.Get_size()
    for t in tensors:
        work = reduction_tensor(t)
        reqs.append(comm.Iallreduce(MPI.IN_PLACE, typed_spec(work), mpi_op(op, t.dtype)))
        steps.append(finish_reduction(t, work, op, size))
        keep.append(work)
    return reqs, _chain(steps), keep


def allreduce_coalesced(comm: MPI.Intracomm, tensors: list[torch.Tensor], op: int) -> Started:
    """One allreduce per dtype over the tensors flattened together."""
    by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    reqs, steps, keep = [], [], []
    size = comm.Get_size()
    for dtype, group in by_dtype.items():
        flat = torch.cat([reduction_tensor(t).reshape(-1) for t in group])
        reqs.append(comm.Iallreduce(MPI.IN_PLACE, typed_spec(flat), mpi_op(op, dtype)))
        steps.append(finish_reduction(flat, flat, op, size))
        steps.append(_unflatten(flat, group))
        keep.append(flat)
    return reqs, _chain(steps), keep


def _unflatten(flat: torch.Tensor, tensors: list[torch.Tensor]) -> Callable[[], None]:
    def run() -> None:
        offset = 0
        for t in tensors:
            n = t.numel()
            t.copy_(flat[offset : offset + n].view(t.shape))
            offset += n

    return run


def broadcast(comm: MPI.Intracomm, tensors: list[torch.Tensor], root: int) -> Started:
    reqs, back = [], []
    for t in tensors:
        buf, copy = output_buffer(t, keep_values=comm.Get_rank() == root)
        reqs.append(comm.Ibcast(spec(buf), root))
        if copy and comm.Get_rank() != root:
            back.append((t, buf))
    return reqs, _copy_back(back) if back else None, back


def reduce(comm: MPI.Intracomm, tensors: list[torch.Tensor], root: int, op: int) -> Started:
    reqs, steps, keep = [], [], []
    is_root = comm.Get_rank() == root
    for t in tensors:
        work = reduction_tensor(t)
        mop = mpi_op(op, t.dtype)
        if is_root:
            reqs.append(comm.Ireduce(MPI.IN_PLACE, typed_spec(work), mop, root))
            steps.append(finish_reduction(t, work, op, comm.Get_size()))
        else:
            reqs.append(comm.Ireduce(typed_spec(work), None, mop, root))
        keep.append(work)
    return reqs, _chain(steps), keep


def allgather(
    comm: MPI.Intracomm, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor]
) -> Started:
    reqs, steps, keep = [], [], []
    for outs, t in zip(outputs, inputs, strict=True):
        src, sizes, flat = gather_layout(outs, t)
        if all(n == src.numel() for n in sizes):
            reqs.append(comm.Iallgather(spec(src), spec(flat)))
        else:
            recv = [_addr(flat), (sizes, displacements(sizes)), MPI.BYTE]
            reqs.append(comm.Iallgatherv(spec(src), recv))
        steps.append(_chunks_into(flat, outs, sizes))
        keep += [src, flat]
    return reqs, _chain(steps), keep


def allgather_into_tensor(
    comm: MPI.Intracomm, outputs: list[torch.Tensor], inputs: list[torch.Tensor]
) -> Started:
    reqs, back, keep = [], [], []
    for out, t in zip(outputs, inputs, strict=True):
        buf, copy = output_buffer(out, keep_values=False)
        src = _gather_source(t, buf, comm.Get_rank())
        reqs.append(comm.Iallgather(MPI.IN_PLACE if src is None else spec(src), spec(buf)))
        if copy:
            back.append((out, buf))
        keep += [src, buf]
    return reqs, _copy_back(back) if back else None, keep


def _gather_source(t: torch.Tensor, out: torch.Tensor, rank: int) -> torch.Tensor | None:
    """What this rank sends to an allgather into ``out``: None when t is already this rank's
    block of out (FSDP2 gathers in place), a copy when t overlaps out elsewhere."""
    src = as_bytes(t)
    nbytes, block = src.numel(), src.data_ptr() - out.data_ptr()
    if not nbytes or block + nbytes <= 0 or block >= out.numel() * out.element_size():
        return src
    return None if block == rank * nbytes else src.clone()


def reduce_scatter(
    comm: MPI.Intracomm,
    outputs: list[torch.Tensor],
    inputs: list[list[torch.Tensor]],
    op: int,
) -> Started:
    reqs, steps, keep = [], [], []
    for out, ins in zip(outputs, inputs, strict=True):
        counts = [x.numel() for x in ins]
        flat = torch.cat([reduction_tensor(x).reshape(-1) for x in ins])
        work = _reduction_output(out)
        reqs.append(
            comm.Ireduce_scatter(typed_spec(flat), typed_spec(work), counts, mpi_op(op, out.dtype))
        )
        steps.append(finish_reduction(out, work, op, comm.Get_size()))
        keep += [flat, work]
    return reqs, _chain(steps), keep


def reduce_scatter_tensor(
    comm: MPI.Intracomm, outputs: list[torch.Tensor], inputs: list[torch.Tensor], op: int
) -> Started:
    reqs, steps, keep = [], [], []
    size = comm.Get_size()
    for out, t in zip(outputs, inputs, strict=True):
        src = reduction_tensor(t)
        work = _reduction_output(out)
        reqs.append(
            comm.Ireduce_scatter_block(typed_spec(src), typed_spec(work), mpi_op(op, out.dtype))
        )
        steps.append(finish_reduction(out, work, op, size))
        keep += [src, work]
    return reqs, _chain(steps), keep


def _reduction_output(out: torch.Tensor) -> torch.Tensor:
    if out.dtype in (torch.float16, torch.bfloat16):
        return torch.empty(out.shape, dtype=torch.float32)
    return output_buffer(out, keep_values=False)[0]


def gather(
    comm: MPI.Intracomm, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], root: int
) -> Started:
    if comm.Get_rank() != root:
        src = as_bytes(inputs[0])
        return [comm.Igatherv(spec(src), None, root)], None, src
    outs = outputs[0]
    src, sizes, flat = gather_layout(outs, inputs[0])
    recv = [_addr(flat), (sizes, displacements(sizes)), MPI.BYTE]
    req = comm.Igatherv(spec(src), recv, root)
    return [req], _chunks_into(flat, outs, sizes), (src, flat)


def scatter(
    comm: MPI.Intracomm, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], root: int
) -> Started:
    out = outputs[0]
    buf, copy = output_buffer(out, keep_values=False)
    finish = _copy_back([(out, buf)]) if copy else None
    if comm.Get_rank() != root:
        return [comm.Iscatterv(None, spec(buf), root)], finish, buf
    ins = inputs[0]
    flat = torch.cat([as_bytes(x) for x in ins])
    sizes = [x.numel() * x.element_size() for x in ins]
    send = [_addr(flat), (sizes, displacements(sizes)), MPI.BYTE]
    return [comm.Iscatterv(send, spec(buf), root)], finish, (buf, flat)


def alltoall(
    comm: MPI.Intracomm, outputs: list[torch.Tensor], inputs: list[torch.Tensor]
) -> Started:
    send_sizes = [x.numel() * x.element_size() for x in inputs]
    recv_sizes = [x.numel() * x.element_size() for x in outputs]
    sflat = torch.cat([as_bytes(x) for x in inputs])
    rflat = torch.empty(sum(recv_sizes), dtype=torch.uint8)
    send = [_addr(sflat), (send_sizes, displacements(send_sizes)), MPI.BYTE]
    recv = [_addr(rflat), (recv_sizes, displacements(recv_sizes)), MPI.BYTE]
    req = comm.Ialltoallv(send, recv)
    return [req], _chunks_into(rflat, outputs, recv_sizes), (sflat, rflat)


def alltoall_single(
    comm: MPI.Intracomm,
    out: torch.Tensor,
    t: torch.Tensor,
    out_splits: list[int],
    in_splits: list[int],
) -> Started:
    size = comm.Get_size()
    send_sizes = _split_bytes(t, in_splits, size)
    recv_sizes = _split_bytes(out, out_splits, size)
    src = as_bytes(t)
    buf, copy = output_buffer(out, keep_values=False)
    send = [_addr(src), (send_sizes, displacements(send_sizes)), MPI.BYTE]
    recv = [_addr(buf), (recv_sizes, displacements(recv_sizes)), MPI.BYTE]
    req = comm.Ialltoallv(send, recv)
    return [req], _copy_back([(out, buf)]) if copy else None, (src, buf)


def barrier(comm: MPI.Intracomm) -> Started:
    return [comm.Ibarrier()], None, None


def _split_bytes(t: torch.Tensor, splits: list[int], size: int) -> list[int]:
    """Bytes per rank of t split by rows (``splits``, else evenly)."""
    nbytes = t.numel() * t.element_size()
    if not splits:
        return [nbytes // size] * size
    rows = t.shape[0] if t.dim() else 1
    row = nbytes // rows if rows else 0
    return [s * row for s in splits]


def _addr(t: torch.Tensor) -> MPI.buffer:
    return MPI.buffer.fromaddress(t.data_ptr(), t.numel() * t.element_size())


def _chunks_into(
    flat: torch.Tensor, outs: list[torch.Tensor], sizes: list[int]
) -> Callable[[], None]:
    return lambda: copy_chunks(flat, outs, sizes)
