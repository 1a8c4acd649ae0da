"""The DP reduction of TP-replicated parameters' gradients, in a bucket of their own.

A TP-replicated parameter (a LayerNorm, a row-parallel bias, the embeddings, the head) has the
same gradient on every TP rank, and each TP rank averages it over its own DP group. Inside a
DDP bucket shared with TP-sharded parameters, an error-bounded codec would quantize it on a
grid set by the whole bucket (its range and magnitude), which differs between the TP ranks:
the replicas would then be averaged differently and drift apart. Here these gradients leave
DDP (``DistributedDataParallel._set_params_and_buffers_to_ignore_for_model``) and go as one
flat buffer whose every input (gradients, error-feedback residual, settings) is the same on
all TP ranks, so that every TP rank computes the same bits.

Not so with ``codec="auto"``: its choice follows what each DP group measured of its own link
and codecs, so two DP groups fed the same gradients may choose differently (seen: 1 run in 5
of dp 2 x tp 2 on a loaded machine). Then only the first TP rank's DP groups reduce, and the
TP group broadcasts their result.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from mpi4py import MPI
from torch import nn

import pycomm
from pycomm.collectives.buffers import all_finite
from pycomm.train.guard import ErrorSample
from pycomm.train.meters import OpMeter

#: Below this many elements the bucket goes uncompressed (as in the DDP hook).
MIN_COMPRESS_NUMEL = 1024


class ReplicatedGradients:
    """Averages the gradients of ``names`` (parameters of ``module``) over ``comm``."""

    def __init__(
        self,
        module: nn.Module,
        names: list[str],
        comm: MPI.Comm,
        error_feedback: bool,
        tp_comm: MPI.Comm | None = None,
    ) -> None:
        wanted = set(names)
        self.params = [p for n, p in module.named_parameters() if n in wanted]
        self.comm = comm.Dup()
        self.tp = None if tp_comm is None or tp_comm.Get_size() < 2 else tp_comm.Dup()
        self.size = self.comm.Get_size()
        self.numel = sum(p.numel() for p in self.params)
        self.error_feedback = error_feedback
        self.residual = np.zeros(self.numel, np.float32)

    def reduce(
        self, spec: pycomm.CodecSpec, meter: OpMeter, sample: ErrorSample | None = None
    ) -> None:
        """Average the accumulated gradients in place (a parameter without one counts as 0)."""
        if not self.params:
            return
        t0 = time.perf_counter()
        flat = torch.cat(
            [
                (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1)
                for p in self.params
            ]
        ).to(torch.float32)
        x = flat.numpy()
        given = x.copy() if sample is not None else None
        if self.numel < MIN_COMPRESS_NUMEL:
            spec = pycomm.CodecSpec()
        residual = self.residual if spec.compressed and self.error_feedback else None
        stats = pycomm.CommStats()
        relay = spec.auto and self.tp is not None  # the first TP rank's groups reduce (above)
        if not relay or self.tp.Get_rank() == 0:
            pycomm.allreduce(x, self.comm, spec, out=x, op="mean", residual=residual, stats=stats)
        if relay:
            self.tp.Bcast(x, root=0)
        if residual is not None and not all_finite(x):
            residual.fill(0)  # nothing of a non-finite step is carried into the next
        offset = 0
        for p in self.params:
            g = flat[offset : offset + p.numel()].view_as(p).to(p.dtype)
            if p.grad is None:
                p.grad = g.clone()
            else:
                p.grad.copy_(g)
            offset += p.numel()
        meter.calls += stats.calls
        meter.raw_bytes += stats.raw_bytes
        meter.frame_bytes += stats.frame_bytes
        meter.codec_s += stats.compress_seconds
        meter.comm_s += time.perf_counter() - t0 - stats.compress_seconds
        if sample is not None and stats.lossy_calls:  # the same in the DP group
            exact = given.astype(np.float64)
            self.comm.Allreduce(MPI.IN_PLACE, exact, op=MPI.SUM)
            sample.add(x, exact / self.size)

    def close(self) -> None:
        self.comm.Free()
        if self.tp is not None:
            self.tp.Free()
