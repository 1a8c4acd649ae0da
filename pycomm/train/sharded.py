"""Sharded data parallelism (``--fsdp``): FSDP2's ``fully_shard`` over the DP group.

Each decoder block of the stage is one FSDP unit and the stage itself (embedding, head) the
root. Parameters are sharded over the DP ranks, all-gathered for each forward and for the
first backward of a step, and their gradients reduce-scattered onto the shards after the
step's last backward; the optimizer updates the shards. Both collectives run on an mpiucc
group of this run's own, through its compression policy (``pycomm.distributed
.set_compression``): gradients by the DP codec with error feedback, weights by the weight
codec. The shards, the master copy, never go through a codec, so weights cannot drift.

Micro-batches accumulate unsharded gradients: every backward but the step's last runs without
gradient sync and keeps the parameters gathered, as torch's pipelining does with FSDP.

TP-replicated parameters (tp > 1) stay out of FSDP and are averaged in a bucket of their own
(``replicated_grads``): in a flat reduce-scatter buffer shared with TP-sharded gradients, an
error-bounded codec would quantize them on a different grid on each TP rank.

FSDP calls its collectives through ``_MeteredAllGather`` and ``_MeteredReduceScatter``, which
time them on the training thread, count their bytes and, on the guard's sampled steps,
compare them with the exact collective.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.distributed.fsdp._fully_shard._fsdp_collectives import (
    DefaultAllGather,
    DefaultReduceScatter,
)

import pycomm
from pycomm.distributed import Compression, set_compression
from pycomm.distributed._buffers import RedOpType, op_code
from pycomm.train.groups import Layout, new_dp_group
from pycomm.train.guard import Guard
from pycomm.train.meters import Meters
from pycomm.train.replicated_grads import ReplicatedGradients

#: The policy's operation behind each meter.
OPERATION = {"fsdp_rs": "reduce_scatter", "fsdp_ag": "all_gather"}


class ShardedDataParallel:
    """A stage under ``fully_shard`` over a DP group of its own (bare when dp is 1)."""

    def __init__(
        self,
        stage: nn.Module,
        layout: Layout,
        grads: pycomm.CodecSpec,
        weights: pycomm.CodecSpec,
        meters: Meters,
        error_feedback: bool = True,
        replicated: list[str] | tuple[str, ...] = (),
        tp_comm: MPI.Comm | None = None,
    ) -> None:
        self.meters = meters
        self.module: nn.Module = stage
        self.guard: Guard | None = None  #: measures the codecs' error on sampled steps
        self.group = new_dp_group(layout)  # collective over the world
        self.size = self.group.size()
        self.policy = set_compression(
            self.group, Compression(grads, weights, error_feedback=error_feedback)
        )
        self._replicated: ReplicatedGradients | None = None
        self.units: list[FSDPModule] = []  #: the FSDP units, the root (the stage) first
        if self.size == 1:
            return
        self._exact_comm = self.group.comm.Dup()  # the guard's exact reference collectives
        wanted = set(replicated)
        ignored = {p for n, p in stage.named_parameters() if n in wanted}
        if ignored:
            self._replicated = ReplicatedGradients(
                stage, list(replicated), self.group.comm, error_feedback, tp_comm
            )
        mesh = DeviceMesh.from_group(self.group, "cpu", mesh_dim_names=("dp",))
        for block in stage.blocks.values():
            fully_shard(block, mesh=mesh, ignored_params=ignored)
        fully_shard(stage, mesh=mesh, ignored_params=ignored)
        self.units = [m for m in stage.modules() if isinstance(m, FSDPModule)]
        for unit in self.units:
            unit.set_custom_all_gather(_MeteredAllGather(self))
            unit.set_custom_reduce_scatter(_MeteredReduceScatter(self))

    @property
    def spec(self) -> pycomm.CodecSpec:
        """The codec of the gradients (reduce-scatter, and the TP-replicated bucket)."""
        return self.policy.reduce_scatter

    @spec.setter
    def spec(self, spec: pycomm.CodecSpec) -> None:
        self.policy.reduce_scatter = spec

    @property
    def weight_spec(self) -> pycomm.CodecSpec:
        return self.policy.all_gather

    @weight_spec.setter
    def weight_spec(self, spec: pycomm.CodecSpec) -> None:
        self.policy.all_gather = spec

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.module(x)

    def backward(self, output: torch.Tensor, grad: torch.Tensor | None, last: bool) -> None:
        """Backward of one micro-batch; ``last`` reduce-scatters the accumulated gradients."""
        if self.size == 1:
            torch.autograd.backward(output, grad)
            return
        root = self.module  # the stage: fully_shard's root, the settings recurse from it
        root.set_is_last_backward(last)
        root.set_reshard_after_backward(last)
        root.set_requires_gradient_sync(last)
        torch.autograd.backward(output, grad)
        if last and self._replicated is not None:
            sample = None if self.guard is None else self.guard.sample("fsdp_rs")
            self._replicated.reduce(self.spec, self.meters["dp"], sample)

    def state_dict(self) -> dict:
        """The reduce-scatters' and the TP-replicated bucket's error feedback (the codecs are
        the guard's to save), for a checkpoint."""
        return {
            "policy": self.policy.state_dict(),
            "replicated": None if self._replicated is None else self._replicated.residual.copy(),
        }

    def load_state_dict(self, state: dict) -> None:
        self.policy.load_state_dict(state["policy"])
        if self._replicated is not None:
            self._replicated.residual[:] = state["replicated"]

    def set_sampling(self, on: bool) -> None:
        """Nothing to arm: the metered collectives ask the guard themselves."""

    @contextlib.contextmanager
    def gathered(self) -> Iterator[None]:
        """The stage's full parameters in place of its shards (all-gathered, as forward has
        them), unmetered; resharded on exit."""
        self.meters.recording, was = False, self.meters.recording
        try:
            for unit in self.units:
                unit.unshard()
            yield
        finally:
            for unit in self.units:
                unit.reshard()
            self.meters.recording = was

    def metered(
        self,
        name: str,
        call: Callable[[], dist.Work | None],
        given: torch.Tensor,
        result: torch.Tensor,
        exact: Callable[[np.ndarray], np.ndarray],
    ) -> None:
        """Run one FSDP collective (blocking) and record it under meter ``name``."""
        sample = None if self.guard is None else self.guard.sample(name)
        reference = given.detach().double().numpy().copy() if sample is not None else None
        stats = self.policy.stats[OPERATION[name]]
        calls, wire, codec = stats.calls, stats.frame_bytes, stats.compress_seconds
        t0 = time.perf_counter()
        work = call()
        if work is not None:
            work.wait()
        elapsed = time.perf_counter() - t0
        meter = self.meters[name]
        meter.calls += 1
        meter.raw_bytes += given.nbytes
        if stats.calls > calls:  # it went through the codec
            meter.frame_bytes += stats.frame_bytes - wire
            meter.codec_s += stats.compress_seconds - codec
            meter.comm_s += elapsed - (stats.compress_seconds - codec)
        else:
            meter.frame_bytes += given.nbytes
            meter.comm_s += elapsed
        if sample is not None:
            sample.add(result, exact(reference))

    def exact_reduce_scatter(self, x: np.ndarray, average: bool) -> np.ndarray:
        """This rank's block of the exact sum (or mean) of every rank's x, in float64."""
        self._exact_comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
        m = x.size // self.size
        block = x[self.group.rank() * m : (self.group.rank() + 1) * m]
        return block / self.size if average else block

    def exact_all_gather(self, x: np.ndarray) -> np.ndarray:
        out = np.empty(x.size * self.size, x.dtype)
        self._exact_comm.Allgather(x, out)
        return out

    def close(self) -> None:
        if self.size > 1:
            self._exact_comm.Free()
        if self._replicated is not None:
            self._replicated.close()
        set_compression(self.group)


class _MeteredAllGather(DefaultAllGather):
    """FSDP's all-gather of weights, timed, counted and (sampled steps) checked."""

    def __init__(self, owner: ShardedDataParallel) -> None:
        self.owner = owner

    def __call__(self, output_tensor, input_tensor, group, async_op=False):  # noqa: ANN001
        def call() -> dist.Work | None:
            return super(_MeteredAllGather, self).__call__(
                output_tensor, input_tensor, group, async_op
            )

        owner = self.owner
        owner.metered("fsdp_ag", call, input_tensor, output_tensor, owner.exact_all_gather)


class _MeteredReduceScatter(DefaultReduceScatter):
    """FSDP's reduce-scatter of gradients, timed, counted and (sampled steps) checked."""

    def __init__(self, owner: ShardedDataParallel) -> None:
        self.owner = owner

    def __call__(self, output_tensor, input_tensor, group, op, async_op=False):  # noqa: ANN001
        def call() -> dist.Work | None:
            return super(_MeteredReduceScatter, self).__call__(
                output_tensor, input_tensor, group, op, async_op
            )

        average = op_code(op) == int(RedOpType.AVG)
        owner = self.owner
        owner.metered(
            "fsdp_rs",
            call,
            input_tensor,
            output_tensor,
            lambda x: owner.exact_reduce_scatter(x, average),
        )
