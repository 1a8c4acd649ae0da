"""Data parallelism: torch DDP on the DP group, gradients through pycomm's DDP hooks.

Parameters replicated across the TP group (``replicated``) are left out of DDP and averaged in
a bucket of their own after the last backward (``replicated_grads``), so that their copies on
the TP ranks stay bitwise identical under an error-bounded codec.

A pipeline stage runs several micro-batch forwards before their backwards, so DDP must not
reduce after the first backward. Every forward and backward runs under ``no_sync`` except the
step's last backward, before which the reducer is armed by hand, as torch's own pipelining
(``torch.distributed.pipelining.stage``) does: the gradients of all micro-batches have then
accumulated, and the buckets go out while that backward still computes.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import torch
import torch.distributed as dist
from mpi4py import MPI
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import pycomm
from pycomm.distributed.hooks import CompressHookState, mpiucc_allreduce_hook, mpiucc_compress_hook
from pycomm.train.guard import Guard
from pycomm.train.meters import Meters
from pycomm.train.replicated_grads import ReplicatedGradients


class _TimedHookState:
    """The hook's state, plus when DDP last handed a bucket over (to time the exposed wait)
    and, on the guard's sampled steps, each bucket's input and result (``sampled``) where it
    went lossy (``lossy_seen``: the hook's count of lossy calls when the last one ended;
    buckets end in call order on the communication thread)."""

    def __init__(self, inner: CompressHookState, compress: bool) -> None:
        self.inner, self.compress = inner, compress
        self.last_bucket_at = 0.0
        self.sampling = False
        self.sampled: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.lossy_seen = 0
        self.index_of: dict[int, int] = {}  #: id of a parameter -> its index in DDP's list
        self.buckets: dict[int, list[int]] = {}  #: DDP's buckets as last seen (indices)


def _timed_hook(state: _TimedHookState, bucket):  # noqa: ANN001, ANN202 (DDP checks annotations)
    state.last_bucket_at = time.perf_counter()
    state.buckets[bucket.index()] = [state.index_of[id(p)] for p in bucket.parameters()]
    hook = mpiucc_compress_hook if state.compress else mpiucc_allreduce_hook
    if not (state.sampling and state.compress):
        return hook(state.inner, bucket)
    given = bucket.buffer().detach().clone()

    def keep(fut):  # noqa: ANN001, ANN202
        result = fut.value()
        lossy = state.inner.stats.lossy_calls
        if lossy != state.lossy_seen:  # this bucket went lossy (raw: nothing to measure)
            state.sampled.append((given, result.detach().clone()))
        state.lossy_seen = lossy
        return result

    return hook(state.inner, bucket).then(keep)


@contextlib.contextmanager
def _bucket_layout(buckets: list[list[int]] | None) -> Iterator[None]:
    """DDP built with these buckets (indices into its parameter list, in bucket order)
    instead of its first-step layout; DDP still rebuilds them by readiness after a step."""
    if not buckets:
        yield
        return
    compute = dist._compute_bucket_assignment_by_size

    def saved(params, limits, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        # DDP hands the Reducer this list reversed (its guess of the readiness order)
        return [list(b) for b in reversed(buckets)], [limits[-1]] * len(buckets)

    dist._compute_bucket_assignment_by_size = saved
    try:
        yield
    finally:
        dist._compute_bucket_assignment_by_size = compute


class DataParallel:
    """A stage wrapped in DDP over the DP group (or left bare when the group has one rank)."""

    def __init__(
        self,
        stage: nn.Module,
        group: dist.ProcessGroup,
        spec: pycomm.CodecSpec,
        meters: Meters,
        bucket_mb: float = 25.0,
        error_feedback: bool = True,
        replicated: list[str] | tuple[str, ...] = (),
        tp_comm: MPI.Comm | None = None,
        buckets: list[list[int]] | None = None,
    ) -> None:
        """``buckets``: DDP's bucket layout as a checkpoint saved it (``state_dict``)."""
        self.meters = meters
        self.size = group.size()
        self._state: _TimedHookState | None = None
        self._replicated: ReplicatedGradients | None = None
        self.guard: Guard | None = None  #: measures the codec's error on sampled steps
        if self.size == 1:
            self.module: nn.Module = stage
            return
        self._exact_comm = group.comm.Dup()  # the guard's uncompressed reference reductions
        if replicated:  # TP-replicated parameters: their own bucket, outside DDP
            DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
                stage, list(replicated)
            )
            self._replicated = ReplicatedGradients(
                stage, list(replicated), group.comm, error_feedback, tp_comm
            )
        with _bucket_layout(buckets):
            self.module = DistributedDataParallel(
                stage, process_group=group, bucket_cap_mb=bucket_mb
            )
        params = spec.options()
        inner = CompressHookState(
            spec.codec, error_feedback=error_feedback, process_group=group, **params
        )
        self._state = _TimedHookState(inner, spec.compressed)
        params, _ = self.module._build_params_for_reducer()
        self._state.index_of = {id(p): i for i, p in enumerate(params)}
        self.module.register_comm_hook(self._state, _timed_hook)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with self._no_sync():
            return self.module(x)

    def backward(self, output: torch.Tensor, grad: torch.Tensor | None, last: bool) -> None:
        """Backward of one micro-batch; ``last`` reduces the accumulated gradients over DP."""
        if self._state is None:
            torch.autograd.backward(output, grad)
            return
        if not last:
            with self._no_sync():
                torch.autograd.backward(output, grad)
            return
        stats = self._state.inner.stats
        before = (
            stats.calls,
            stats.raw_bytes,
            stats.frame_bytes,
            stats.compress_seconds,
            stats.total_seconds,
        )
        self.module.reducer.prepare_for_backward([])  # type: ignore[union-attr, operator]
        self._state.last_bucket_at = time.perf_counter()
        torch.autograd.backward(output, grad)  # returns once every bucket is reduced
        done = time.perf_counter()
        meter = self.meters["dp"]
        meter.comm_s += max(0.0, done - self._state.last_bucket_at)
        meter.calls += stats.calls - before[0]
        meter.raw_bytes += stats.raw_bytes - before[1]
        meter.frame_bytes += stats.frame_bytes - before[2]
        meter.background_s += stats.total_seconds - before[4]
        self._measure()
        if self._replicated is not None:
            sample = None if self.guard is None else self.guard.sample("dp")
            self._replicated.reduce(self.spec, meter, sample)

    @property
    def spec(self) -> pycomm.CodecSpec:
        """The codec of the gradients (``none`` while they go uncompressed)."""
        if self._state is None or not self._state.compress:
            return pycomm.CodecSpec()
        return self._state.inner.codec

    @spec.setter
    def spec(self, spec: pycomm.CodecSpec) -> None:
        if self._state is not None:
            self._state.inner.codec = spec
            self._state.compress = spec.compressed

    def _measure(self) -> None:
        """The sampled buckets' results against their exact average (the guard's)."""
        state = self._state
        sample = None if self.guard is None else self.guard.sample("dp")
        if state is None or sample is None:
            return
        for given, result in state.sampled:
            exact = given.double().numpy()
            self._exact_comm.Allreduce(MPI.IN_PLACE, exact, op=MPI.SUM)
            sample.add(result, exact / self.size)
        state.sampled.clear()

    def state_dict(self) -> dict:
        """DDP's bucket layout, the error feedback of its buckets and of the TP-replicated
        bucket (the codec is the guard's to save), for a checkpoint.

        The layout matters: DDP lays its buckets out in reverse parameter order, then after
        its first step by the order the gradients became ready, and a bucket's codec
        quantizes on a grid of the whole bucket (its rms). A resumed run builds DDP with
        the layout saved (``buckets``), so its first step reduces what the straight run's did.
        """
        if self._state is None:
            return {}
        named = list(self.module.module.named_parameters())
        return {
            "buckets": [self._state.buckets[i] for i in sorted(self._state.buckets)],
            "hook": self._state.inner.residuals_by_name(named),
            "replicated": None if self._replicated is None else self._replicated.residual.copy(),
        }

    def load_state_dict(self, state: dict) -> None:
        if self._state is None:
            return
        named = list(self.module.module.named_parameters())
        self._state.inner.load_residuals_by_name(state["hook"], named)
        if self._replicated is not None:
            self._replicated.residual[:] = state["replicated"]

    def set_sampling(self, on: bool) -> None:
        if self._state is not None:
            self._state.sampling = on
            self._state.sampled.clear()
            self._state.lossy_seen = self._state.inner.stats.lossy_calls

    def close(self) -> None:
        if self._state is not None:
            self._exact_comm.Free()
        if self._replicated is not None:
            self._replicated.close()

    @contextlib.contextmanager
    def _no_sync(self) -> Iterator[None]:
        if isinstance(self.module, DistributedDataParallel):
            with self.module.no_sync():
                yield
        else:
            yield
