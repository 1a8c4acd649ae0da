"""Compression policy of an mpiucc process group: which codec each of its collectives uses.

    import pycomm
    import pycomm.distributed as pd

    pd.set_compression(
        mesh.get_group("dp"),
        reduce_scatter=pycomm.CodecSpec("ebq", error_bound=1e-3, mode="rel"),  # gradients
        all_gather=pycomm.CodecSpec("int8", block_size=256),                   # weights
    )

The group's ``reduce_scatter_tensor``, ``all_gather_into_tensor`` and ``all_reduce`` then
run through pycomm's compressed collectives (``pycomm.collectives``) for floating-point
tensors of at least ``min_numel`` elements reduced by SUM or AVG; everything else, and every
operation given no codec, stays exact. Every rank still ends with the same bits.

- **Gradients** (reduce_scatter, FSDP2's): with ``error_feedback`` each rank keeps what its
  compression lost, one residual per reduce-scatter of a backward pass (its n-th call of a
  given size and dtype; the count restarts when the backward pass ends), and sends it with the
  next step. An ebq bound holds for each reduced block (``pycomm.reduce_scatter``).
- **Weights** (all_gather, FSDP2's unsharding): each rank compresses its shard, and every rank,
  its owner too, receives the decoded shards: the sharded parameter, the master copy the
  optimizer updates, is never touched, so the error never accumulates from step to step.
  Blockwise int8 scales each block to its own range; ebq with ``mode="rel"`` bounds the error
  by a fraction of each shard's range.
- **all_reduce**: compressed without error feedback (a sum of activations or statistics has
  no next step to carry a residual into). DDP's gradients have their own hook (``hooks``).

``state_dict()``/``load_state_dict()`` carry the residuals through a checkpoint; the policy
also pickles (without its group). ``stats[op]`` (a ``pycomm.CommStats``) adds up what the
compressed calls of each operation cost: bytes raw and on the wire, codec and total time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI

from pycomm.collectives import held
from pycomm.collectives.engine import Engine
from pycomm.collectives.spec import CodecSpec, make_spec
from pycomm.collectives.stats import CommStats
from pycomm.distributed._buffers import RedOpType, op_code

#: The ops a policy may name and the collectives they steer.
OPERATIONS = ("reduce_scatter", "all_gather", "all_reduce")
_FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
_REDUCE_OPS = {int(RedOpType.SUM): "sum", int(RedOpType.AVG): "mean"}


class Compression:
    """Per-operation codecs of one process group, and its gradients' error feedback."""

    __slots__ = (
        "reduce_scatter",
        "all_gather",
        "all_reduce",
        "error_feedback",
        "min_numel",
        "residuals",
        "stats",
        "_ordinals",
        "_reset_queued",
    )

    def __init__(
        self,
        reduce_scatter: CodecSpec | str | None = None,
        all_gather: CodecSpec | str | None = None,
        all_reduce: CodecSpec | str | None = None,
        *,
        error_feedback: bool = True,
        min_numel: int = 1024,
    ) -> None:
        self.reduce_scatter = make_spec(reduce_scatter)
        self.all_gather = make_spec(all_gather)
        self.all_reduce = make_spec(all_reduce)
        self.error_feedback = error_feedback
        self.min_numel = int(min_numel)
        self.residuals: dict[tuple, np.ndarray] = {}
        #: per operation, what its compressed calls cost (bytes raw and on the wire, time)
        self.stats = {op: CommStats() for op in OPERATIONS}
        self._ordinals: dict[tuple, int] = {}
        self._reset_queued = False

    def __repr__(self) -> str:
        ops = ", ".join(f"{op}={getattr(self, op)!r}" for op in OPERATIONS)
        return f"Compression({ops}, error_feedback={self.error_feedback})"

    def __getstate__(self) -> dict:
        return {
            "specs": {op: getattr(self, op) for op in OPERATIONS},
            "error_feedback": self.error_feedback,
            "min_numel": self.min_numel,
            "residuals": self.residuals,
        }

    def __setstate__(self, state: dict) -> None:
        self.__init__(
            **state["specs"], error_feedback=state["error_feedback"], min_numel=state["min_numel"]
        )
        self.residuals = dict(state["residuals"])

    def state_dict(self) -> dict[str, Any]:
        """The residuals (tensors keyed by a string), for ``torch.save`` with the model's."""
        return {
            "residuals": {
                _key_name(k): torch.from_numpy(r.copy()) for k, r in self.residuals.items()
            }
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.residuals = {
            _key_of(name): t.detach().cpu().numpy().copy() for name, t in state["residuals"].items()
        }

    def spec_for(
        self, op: str, tensors: list[torch.Tensor], reduce_op: Any = None
    ) -> CodecSpec | None:
        """The codec for this call, or None to run it exactly."""
        spec = getattr(self, op)
        if not spec.compressed or len(tensors) != 1:
            return None
        t = tensors[0]
        if t.dtype not in _FLOATS or t.numel() < self.min_numel or not t.is_cpu:
            return None
        if reduce_op is not None and op_code(reduce_op) not in _REDUCE_OPS:
            return None
        return spec

    def residual_for(self, op: str, x: np.ndarray) -> np.ndarray | None:
        """The residual of this call (x's size and dtype), by its order in the backward pass."""
        if not self.error_feedback:
            return None
        key = (op, x.size, x.dtype.str, self._ordinal((op, x.size, x.dtype.str)))
        r = self.residuals.get(key)
        if r is None:
            r = self.residuals[key] = np.zeros(x.size, x.dtype)
        return r

    def _ordinal(self, key: tuple) -> int:
        """n for the n-th call of this key in the running backward pass (0 outside one)."""
        if torch._C._current_graph_task_id() == -1:
            return 0
        if not self._reset_queued:
            torch.autograd.Variable._execution_engine.queue_callback(self._end_of_backward)
            self._reset_queued = True
        n = self._ordinals.get(key, 0)
        self._ordinals[key] = n + 1
        return n

    def _end_of_backward(self) -> None:
        self._ordinals.clear()
        self._reset_queued = False


def _key_name(key: tuple) -> str:
    return "/".join(str(k) for k in key)


def _key_of(name: str) -> tuple:
    op, size, dtype, ordinal = name.split("/")
    return (op, int(size), dtype, int(ordinal))


def set_compression(
    group: dist.ProcessGroup | None = None,
    policy: Compression | None = None,
    **codecs: Any,
) -> Compression | None:
    """Give an mpiucc group (default: the world) a compression policy, and return it.

    Either a ``Compression`` or its keywords (``reduce_scatter=``, ``all_gather=``,
    ``all_reduce=``: a ``CodecSpec`` or a codec name; ``error_feedback=``, ``min_numel=``).
    ``set_compression(group)`` with neither turns compression off. Every rank of the group
    must set the same policy before the group's next collective (the collectives check it).
    """
    group = group if group is not None else dist.group.WORLD
    if not hasattr(group, "compression"):
        raise TypeError(f"compression needs an mpiucc group, not {type(group).__name__}")
    if policy is not None and codecs:
        raise TypeError("pass a Compression or its keywords, not both")
    if policy is None and codecs:
        policy = Compression(**codecs)
    group.compression = policy
    return policy


def get_compression(group: dist.ProcessGroup | None = None) -> Compression | None:
    """The group's compression policy (None: exact)."""
    group = group if group is not None else dist.group.WORLD
    return getattr(group, "compression", None)


# -- the compressed collectives, as jobs for the group's engine (so they run ``held``) --


def _host_float(t: torch.Tensor) -> np.ndarray:
    """A flat numpy array of t: a view for float32/64, else widened to float32."""
    t = t.detach().reshape(-1)
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return t.contiguous().numpy()


_NUMPY = {torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64)}


def _direct(out: torch.Tensor, dtype: np.dtype) -> np.ndarray | None:
    """out's own memory as a flat numpy array when a collective can decode straight into it
    (a contiguous CPU tensor of the working dtype), else None: a temporary, copied at the end."""
    if out.dtype not in _NUMPY or _NUMPY[out.dtype] != dtype or out.numel() == 0:
        return None
    return out.detach().view(-1).numpy() if out.is_contiguous() and out.is_cpu else None


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    lo, hi = a.data_ptr(), a.data_ptr() + a.numel() * a.element_size()
    return b.data_ptr() < hi and lo < b.data_ptr() + b.numel() * b.element_size()


def _write(out: torch.Tensor, values: np.ndarray) -> None:
    out.copy_(torch.from_numpy(values).view(out.shape))


Job = Callable[[MPI.Comm], None]


def reduce_scatter_job(
    policy: Compression, spec: CodecSpec, eng: Engine, out: torch.Tensor, x: torch.Tensor, op: Any
) -> Job:
    a = _host_float(x)
    # Decoding into out even where it overlaps x is safe: x is read whole (compressed, or
    # summed uncompressed into a temporary) before anything is written.
    direct = _direct(out, a.dtype)
    res = np.empty(out.numel(), a.dtype) if direct is None else direct
    residual = (
        policy.residual_for("reduce_scatter", a) if spec.caps.exact_sum or spec.auto else None
    )
    how = _REDUCE_OPS[op_code(op)]

    def job(comm: MPI.Comm) -> None:
        stats = policy.stats["reduce_scatter"]
        held.reduce_scatter(eng, comm, a, spec, op=how, out=res, residual=residual, stats=stats)
        if direct is None:
            _write(out, res)

    return job


def all_gather_job(
    policy: Compression, spec: CodecSpec, eng: Engine, out: torch.Tensor, x: torch.Tensor
) -> Job:
    a = _host_float(x)
    direct = _direct(out, a.dtype)
    res = np.empty(out.numel(), a.dtype) if direct is None else direct
    if a.ctypes.data == x.data_ptr() and _overlap(x, out):
        a = a.copy()  # x is this rank's block of out (FSDP2 gathers in place); MPI may not alias

    def job(comm: MPI.Comm) -> None:
        held.allgather(eng, comm, a, spec, out=res, stats=policy.stats["all_gather"])
        if direct is None:
            _write(out, res)

    return job


def all_reduce_job(
    policy: Compression, spec: CodecSpec, eng: Engine, t: torch.Tensor, op: Any
) -> Job:
    a = _host_float(t)
    how = _REDUCE_OPS[op_code(op)]

    in_place = a.ctypes.data == t.data_ptr()

    def job(comm: MPI.Comm) -> None:
        held.allreduce(eng, comm, a, spec, op=how, out=a, stats=policy.stats["all_reduce"])
        if not in_place:
            _write(t, a)

    return job
