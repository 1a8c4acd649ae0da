"""Megatron-style tensor parallelism with compressed all_reduce in forward and backward.

A column-parallel linear (its output features split across the TP ranks) is entered through
``copy_to_tensor_parallel``: identity forward, all_reduce of the input gradient backward (with
the backward codec). A row-parallel linear (its input features split) leaves through
``reduce_from_tensor_parallel``: all_reduce of the partial outputs forward (with the forward
codec), identity backward. Attention heads and MLP columns are split; LayerNorms, embeddings,
the head and the row-parallel biases are replicated and stay bit-identical across TP ranks
because pycomm's allreduce gives every rank the same bits.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from mpi4py import MPI
from torch import nn

import pycomm
from pycomm.train.guard import Guard
from pycomm.train.meters import Meters, OpMeter
from pycomm.train.model import Block, ModelConfig, causal_attention


class TensorParallel:
    """The TP group's communicator, its two codecs, and where their costs are recorded.

    ``codec="none"`` runs a plain MPI_Allreduce (the baseline a user would otherwise have);
    anything else runs ``pycomm.allreduce`` with the CodecSpec.
    """

    def __init__(
        self,
        comm: MPI.Intracomm | None,
        fwd: pycomm.CodecSpec,
        bwd: pycomm.CodecSpec,
        meters: Meters | None = None,
    ) -> None:
        self.comm = MPI.COMM_SELF.Dup() if comm is None else comm.Dup()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.fwd, self.bwd = fwd, bwd
        self.meters = Meters() if meters is None else meters
        self.guard: Guard | None = None  #: measures the codecs' error on sampled steps

    def allreduce(self, x: torch.Tensor, direction: str) -> torch.Tensor:
        """Sum x over the TP ranks with the ``"fwd"`` or ``"bwd"`` codec (a new tensor)."""
        if self.size == 1:
            return x
        spec = self.fwd if direction == "fwd" else self.bwd
        meter = self.meters["tp_" + direction]
        src = x.detach().to(torch.float32).contiguous()
        out = torch.empty_like(src)
        if spec.compressed:
            stats = pycomm.CommStats()
            pycomm.allreduce(src, self.comm, spec, out=out, stats=stats)
            _add_stats(meter, stats)
            sample = None if self.guard is None else self.guard.sample("tp_" + direction)
            if sample is not None and stats.lossy_calls:  # (raw: nothing to measure)
                exact = torch.empty_like(src)
                self.comm.Allreduce(src.numpy(), exact.numpy(), op=MPI.SUM)
                sample.add(out, exact)
        else:
            t0 = time.perf_counter()
            self.comm.Allreduce(src.numpy(), out.numpy(), op=MPI.SUM)
            meter.comm_s += time.perf_counter() - t0
            meter.calls += 1
            meter.raw_bytes += src.nbytes
            meter.frame_bytes += src.nbytes
        return out.to(x.dtype)

    def close(self) -> None:
        self.comm.Free()


def _add_stats(meter: OpMeter, stats: pycomm.CommStats) -> None:
    meter.calls += stats.calls
    meter.raw_bytes += stats.raw_bytes
    meter.frame_bytes += stats.frame_bytes
    meter.codec_s += stats.compress_seconds
    meter.comm_s += stats.comm_seconds


class _CopyToTensorParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, tp: TensorParallel) -> torch.Tensor:
        ctx.tp = tp
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return ctx.tp.allreduce(grad, "bwd"), None


class _ReduceFromTensorParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, tp: TensorParallel) -> torch.Tensor:
        return tp.allreduce(x, "fwd")

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None


def copy_to_tensor_parallel(x: torch.Tensor, tp: TensorParallel) -> torch.Tensor:
    """Identity forward; backward sums the input gradient over TP (the backward codec)."""
    return _CopyToTensorParallel.apply(x, tp) if tp.size > 1 else x


def reduce_from_tensor_parallel(x: torch.Tensor, tp: TensorParallel) -> torch.Tensor:
    """Sums x over TP forward (the forward codec); identity backward."""
    return _ReduceFromTensorParallel.apply(x, tp) if tp.size > 1 else x


class ColumnParallelLinear(nn.Module):
    """y_local = x W_local^T + b_local, W's output rows split across TP ranks."""

    def __init__(self, in_features: int, out_local: int, tp: TensorParallel) -> None:
        super().__init__()
        self.tp = tp
        self.weight = nn.Parameter(torch.empty(out_local, in_features))
        self.bias = nn.Parameter(torch.empty(out_local))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(copy_to_tensor_parallel(x, self.tp), self.weight, self.bias)


class RowParallelLinear(nn.Module):
    """y = sum over TP of x_local W_local^T, then + b (b replicated, added once)."""

    def __init__(self, in_local: int, out_features: int, tp: TensorParallel) -> None:
        super().__init__()
        self.tp = tp
        self.weight = nn.Parameter(torch.empty(out_features, in_local))
        self.bias = nn.Parameter(torch.empty(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return reduce_from_tensor_parallel(F.linear(x, self.weight), self.tp) + self.bias


class ParallelAttention(nn.Module):
    def __init__(self, cfg: ModelConfig, tp: TensorParallel) -> None:
        super().__init__()
        self.local_heads = cfg.heads // tp.size
        local = self.local_heads * cfg.head_dim
        self.qkv = ColumnParallelLinear(cfg.width, 3 * local, tp)
        self.proj = RowParallelLinear(local, cfg.width, tp)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(causal_attention(self.qkv(x), self.local_heads))


class ParallelMLP(nn.Module):
    def __init__(self, cfg: ModelConfig, tp: TensorParallel) -> None:
        super().__init__()
        self.fc = ColumnParallelLinear(cfg.width, cfg.mlp_width // tp.size, tp)
        self.proj = RowParallelLinear(cfg.mlp_width // tp.size, cfg.width, tp)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class ParallelBlock(nn.Module):
    """A Block whose attention and MLP are split across the TP group (same parameter names)."""

    def __init__(self, cfg: ModelConfig, tp: TensorParallel) -> None:
        super().__init__()
        check_divisible(cfg, tp.size)
        self.ln1 = nn.LayerNorm(cfg.width)
        self.attn = ParallelAttention(cfg, tp)
        self.ln2 = nn.LayerNorm(cfg.width)
        self.mlp = ParallelMLP(cfg, tp)

    forward = Block.forward

    @classmethod
    def from_full(cls, full: Block, cfg: ModelConfig, tp: TensorParallel) -> ParallelBlock:
        """This TP rank's shard of a full Block."""
        block = cls(cfg, tp)
        shards = shard_block(dict(full.named_parameters()), cfg, tp.rank, tp.size)
        with torch.no_grad():
            for name, p in block.named_parameters():
                p.copy_(shards[name])
        return block


#: A Block's parameters that are split across the TP ranks; every other parameter of a stage
#: (LayerNorms, row-parallel biases, embeddings, head) is replicated on every TP rank.
TP_SHARDED = (
    "attn.qkv.weight",
    "attn.qkv.bias",
    "attn.proj.weight",
    "mlp.fc.weight",
    "mlp.fc.bias",
    "mlp.proj.weight",
)


def is_tp_sharded(name: str) -> bool:
    """Whether a Block's (``attn.qkv.weight``) or a stage's (``blocks.3.attn.qkv.weight``)
    parameter is split across the TP ranks."""
    return any(name == s or name.endswith("." + s) for s in TP_SHARDED)


def check_divisible(cfg: ModelConfig, tp_size: int) -> None:
    if cfg.heads % tp_size:
        raise ValueError(f"--heads {cfg.heads} is not a multiple of --tp {tp_size}")
    if cfg.mlp_width % tp_size:
        raise ValueError(f"the MLP width {cfg.mlp_width} is not a multiple of --tp {tp_size}")


def shard_block(
    tensors: dict[str, torch.Tensor], cfg: ModelConfig, rank: int, size: int
) -> dict[str, torch.Tensor]:
    """TP rank ``rank``'s part of each of a full Block's tensors (weights or gradients)."""
    heads = slice(rank * cfg.width // size, (rank + 1) * cfg.width // size)
    mlp = slice(rank * cfg.mlp_width // size, (rank + 1) * cfg.mlp_width // size)
    out = {}
    for name, t in tensors.items():
        if name.startswith("attn.qkv."):  # rows [q; k; v]: the same heads of each
            out[name] = t.view(3, cfg.width, *t.shape[1:])[:, heads].reshape(-1, *t.shape[1:])
        elif name.startswith("mlp.fc."):
            out[name] = t[mlp]
        elif name == "attn.proj.weight":
            out[name] = t[:, heads]
        elif name == "mlp.proj.weight":
            out[name] = t[:, mlp]
        else:
            out[name] = t
        out[name] = out[name].detach().clone()
    return out
