"""What a group checks of a collective's arguments: this rank's own always, all ranks' on request.

Locally, before any MPI call, a collective that moves or reduces tensors into others checks
that they have one dtype and the element counts the operation needs: MPI would move raw bytes
between dtypes (a float32 gathered into float64 reads as garbage) without a word. It costs
little next to the call and raises TypeError or ValueError on the caller's thread.

Across ranks, MPI does not check either: a SUM over tensors of different sizes returns wrong
data on some ranks without a word. Checked groups agree, before each collective, on a digest of
what this rank passed (the operation, dtypes, sizes, op and root) through their engine's
agreement (one 160-byte allreduce), and raise on every rank when the digests differ. As torch
does for its own fingerprinting, the check is opt-in, since it doubles the cost of a small
collective: ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` or ``MPIUCC_CHECK=1`` (``MPIUCC_CHECK=0`` turns
it off even under DETAIL; ``pycomm.collectives.checking``), read when a group is made.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import Any

import torch


def _describe(part: Any) -> Any:
    if isinstance(part, torch.Tensor):
        return (str(part.dtype), part.numel())
    if isinstance(part, (list, tuple)):
        return [_describe(p) for p in part]
    return part


def digest(what: str, *parts: Any) -> int:
    """A 31-bit digest of the arguments (exact in the float64 agreement)."""
    return zlib.crc32(repr((what, _describe(parts))).encode()) & 0x7FFFFFFF


# -- local checks: each takes the group's size and rank, then the method's arguments --


def _one_dtype(what: str, tensors: Iterable[torch.Tensor]) -> None:
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        raise TypeError(
            f"{what}: tensors of {' and '.join(sorted(map(str, dtypes)))}; its input and output "
            "tensors must have one dtype (the bytes are moved, not converted)"
        )


def _per_rank(what: str, tensors: list, size: int, role: str) -> None:
    if len(tensors) != size:
        raise ValueError(f"{what}: the {role} list has {len(tensors)} tensors, not {size}")


def _elements(what: str, got: int, want: int, role: str) -> None:
    if got != want:
        raise ValueError(f"{what}: {role} has {got} elements, expected {want}")


def all_gather_into_tensor(size: int, rank: int, outputs: list, inputs: list) -> None:
    what = "all_gather_into_tensor"
    _per_rank(what, outputs, len(inputs), "output")
    for out, t in zip(outputs, inputs, strict=True):
        _one_dtype(what, (out, t))
        _elements(what, out.numel(), size * t.numel(), "the output")


def reduce_scatter_tensor(size: int, rank: int, outputs: list, inputs: list) -> None:
    what = "reduce_scatter_tensor"
    _per_rank(what, outputs, len(inputs), "output")
    for out, t in zip(outputs, inputs, strict=True):
        _one_dtype(what, (out, t))
        _elements(what, t.numel(), size * out.numel(), "the input")


def all_gather(size: int, rank: int, outputs: list, inputs: list) -> None:
    what = "all_gather"
    _per_rank(what, outputs, len(inputs), "outer output")
    for outs, t in zip(outputs, inputs, strict=True):
        _per_rank(what, outs, size, "output")
        _one_dtype(what, (t, *outs))
        _elements(what, outs[rank].numel(), t.numel(), f"output {rank} (this rank's)")


def reduce_scatter(size: int, rank: int, outputs: list, inputs: list) -> None:
    what = "reduce_scatter"
    _per_rank(what, inputs, len(outputs), "outer input")
    for out, ins in zip(outputs, inputs, strict=True):
        _per_rank(what, ins, size, "input")
        _one_dtype(what, (out, *ins))
        _elements(what, ins[rank].numel(), out.numel(), f"input {rank} (this rank's)")


def all_to_all(size: int, rank: int, outputs: list, inputs: list) -> None:
    what = "all_to_all"
    _per_rank(what, outputs, size, "output")
    _per_rank(what, inputs, size, "input")
    _one_dtype(what, (*inputs, *outputs))


def all_to_all_single(
    size: int, rank: int, output: torch.Tensor, input: torch.Tensor, out_splits, in_splits
) -> None:
    what = "all_to_all_single"
    _one_dtype(what, (input, output))
    for t, splits, role in ((input, in_splits, "input"), (output, out_splits, "output")):
        rows = t.shape[0] if t.dim() else 1
        if not splits:
            if t.numel() % size:
                raise ValueError(
                    f"{what}: the {role}'s {t.numel()} elements do not split {size} ways"
                )
        elif len(splits) != size:
            raise ValueError(f"{what}: {len(splits)} {role} splits for {size} ranks")
        elif sum(splits) != rows or min(splits) < 0:
            raise ValueError(f"{what}: {role} splits {list(splits)} do not cover its {rows} rows")
    if not in_splits and not out_splits:
        _elements(what, output.numel(), input.numel(), "the output")


def gather(size: int, rank: int, outputs: list, inputs: list, root: int) -> None:
    if rank == root:
        _rooted("gather", outputs, inputs[0], rank, size, "output")


def scatter(size: int, rank: int, outputs: list, inputs: list, root: int) -> None:
    if rank == root:
        _rooted("scatter", inputs, outputs[0], rank, size, "input")


def _rooted(what: str, lists: list, mine: torch.Tensor, rank: int, size: int, role: str) -> None:
    """The root's list of a tensor per rank: one dtype with the root's own tensor, and the
    root's entry of its size."""
    _per_rank(what, lists, 1, f"outer {role}")
    _per_rank(what, lists[0], size, role)
    _one_dtype(what, (mine, *lists[0]))
    _elements(what, lists[0][rank].numel(), mine.numel(), f"{role} {rank} (the root's)")
