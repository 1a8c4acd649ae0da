"""Tensors as MPI buffers: zero-copy specs, reduction types and ops, host staging."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist
from mpi4py import MPI

_from_address = MPI.buffer.fromaddress
RedOpType = dist.ReduceOp.RedOpType

# Types MPI reduces natively. float16 and bfloat16 are reduced as float32 (see `reduction_tensor`).
DATATYPES: dict[torch.dtype, MPI.Datatype] = {
    torch.float32: MPI.FLOAT,
    torch.float64: MPI.DOUBLE,
    torch.int8: MPI.INT8_T,
    torch.uint8: MPI.UINT8_T,
    torch.int16: MPI.INT16_T,
    torch.int32: MPI.INT32_T,
    torch.int64: MPI.INT64_T,
    torch.uint16: MPI.UINT16_T,
    torch.uint32: MPI.UINT32_T,
    torch.uint64: MPI.UINT64_T,
    torch.bool: MPI.C_BOOL,
}
HALF = (torch.float16, torch.bfloat16)

# MPI op for each torch op code: (floating point / integer, bool). AVG is a SUM, divided after.
_OPS: dict[int, tuple[MPI.Op, MPI.Op]] = {
    int(RedOpType.SUM): (MPI.SUM, MPI.LOR),
    int(RedOpType.AVG): (MPI.SUM, MPI.LOR),
    int(RedOpType.PRODUCT): (MPI.PROD, MPI.LAND),
    int(RedOpType.MIN): (MPI.MIN, MPI.LAND),
    int(RedOpType.MAX): (MPI.MAX, MPI.LOR),
    int(RedOpType.BAND): (MPI.BAND, MPI.LAND),
    int(RedOpType.BOR): (MPI.BOR, MPI.LOR),
    int(RedOpType.BXOR): (MPI.BXOR, MPI.LXOR),
}
AVG = int(RedOpType.AVG)
_BITWISE = (int(RedOpType.BAND), int(RedOpType.BOR), int(RedOpType.BXOR))

# The fast path: op codes whose MPI op is the same for every native non-bool type.
DIRECT_OPS: dict[int, MPI.Op] = {
    int(RedOpType.SUM): MPI.SUM,
    int(RedOpType.PRODUCT): MPI.PROD,
    int(RedOpType.MIN): MPI.MIN,
    int(RedOpType.MAX): MPI.MAX,
}
DIRECT_TYPES = {k: v for k, v in DATATYPES.items() if k is not torch.bool}


def _code_by_attribute(op: dist.ReduceOp) -> int:
    return int(op.op)


def _hash_is_code() -> bool:
    probe = dist.AllreduceOptions()
    for code in _OPS:
        probe.reduceOp = dist.ReduceOp(RedOpType(code))
        if hash(probe.reduceOp) != code:
            return False
    return True


# torch's ReduceOp hashes to its op code: hash() reads it 3x faster than int(op.op), which
# matters on the small-message path. Checked once here, with the slow way as the fallback.
op_code = hash if _hash_is_code() else _code_by_attribute


def mpi_op(op: int, dtype: torch.dtype) -> MPI.Op:
    """The MPI op reducing `dtype` (its float32 stand-in for halves) as torch's op `op` does."""
    pair = _OPS.get(op)
    if pair is None:
        raise ValueError(f"mpiucc does not support ReduceOp {RedOpType(op)}")
    if dtype is torch.bool:
        return pair[1]
    if op in _BITWISE and (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"ReduceOp {RedOpType(op)} needs an integer tensor, got {dtype}")
    return pair[0]


def spec(t: torch.Tensor, datatype: MPI.Datatype | None = None) -> list:
    """[buffer, datatype] over a contiguous CPU tensor (bytes unless a datatype is given)."""
    buf = _from_address(t.data_ptr(), t.numel() * t.element_size())
    return [buf, MPI.BYTE if datatype is None else datatype]


def typed_spec(t: torch.Tensor) -> list:
    """[buffer, datatype] for reducing a contiguous CPU tensor of a native type."""
    return [_from_address(t.data_ptr(), t.numel() * t.element_size()), DATATYPES[t.dtype]]


def is_plain(t: torch.Tensor) -> bool:
    """A contiguous CPU tensor: MPI can use its memory directly."""
    return t.is_cpu and t.is_contiguous()


def host(t: torch.Tensor) -> torch.Tensor:
    """A contiguous CPU tensor with t's values (t itself when it is one already)."""
    t = t.detach()
    return t if is_plain(t) else t.to("cpu").contiguous()


def as_bytes(t: torch.Tensor) -> torch.Tensor:
    """A flat uint8 view of host(t)."""
    return host(t).reshape(-1).view(torch.uint8)


def reduction_tensor(t: torch.Tensor) -> torch.Tensor:
    """What MPI reduces for t: t itself if plain and native, else a float32 or host copy."""
    if t.dtype in HALF:
        return t.detach().to(device="cpu", dtype=torch.float32)
    if t.dtype not in DATATYPES:
        raise TypeError(f"mpiucc cannot reduce tensors of {t.dtype}")
    return host(t)


def finish_reduction(t: torch.Tensor, work: torch.Tensor, op: int, size: int) -> Callable[[], None]:
    """After the reduction into `work`: divide for AVG and copy back into t if needed."""

    def finish() -> None:
        if op == AVG:
            if work.dtype.is_floating_point:
                work.div_(size)
            elif work.dtype is not torch.bool:
                work.copy_(torch.div(work, size, rounding_mode="trunc"))
        if work is not t:
            t.copy_(work)

    return finish


def output_buffer(t: torch.Tensor, keep_values: bool) -> tuple[torch.Tensor, bool]:
    """A plain stand-in for an output tensor; the flag says whether to copy it back."""
    if is_plain(t):
        return t, False
    h = torch.empty(t.shape, dtype=t.dtype, device="cpu")
    if keep_values:
        h.copy_(t)
    return h, True


def gather_layout(
    outs: list[torch.Tensor], t: torch.Tensor
) -> tuple[torch.Tensor, list[int], torch.Tensor]:
    """A gather of t into ``outs`` (one per rank): t's bytes, each rank's byte count, and the
    flat byte buffer that receives them all (``copy_chunks`` spreads it into outs)."""
    sizes = [o.numel() * o.element_size() for o in outs]
    return as_bytes(t), sizes, torch.empty(sum(sizes), dtype=torch.uint8)


def copy_chunks(flat: torch.Tensor, outs: list[torch.Tensor], sizes: list[int]) -> None:
    """Copy consecutive byte chunks of `flat` into the tensors `outs`."""
    offset = 0
    for out, n in zip(outs, sizes, strict=True):
        if n:
            out.copy_(flat[offset : offset + n].view(out.dtype).view(out.shape))
        offset += n


def displacements(counts: list[int]) -> list[int]:
    out, total = [], 0
    for c in counts:
        out.append(total)
        total += c
    return out
