"""DDP communication hooks that put mpiucc's codecs on the wire.

    state = CompressHookState(codec="ebq", error_bound=1e-4, mode="rel")
    ddp.register_comm_hook(state, mpiucc_compress_hook)

The hook hands each gradient bucket to ``pycomm.iallreduce`` (op="mean"), which runs on the
communicator's communication thread, so backward computation goes on meanwhile; the future
completes there, with the averaged gradients written in place into the bucket.

NaN and ±Inf in a gradient reach every rank's bucket (codecs/FORMAT.md, "Non-finite values");
a bucket whose averaged result holds one adds 1 to ``state.stats.nonfinite`` on every rank, so
that a training loop can skip the step as ``torch.amp.GradScaler`` does:

    before = state.stats.nonfinite
    loss.backward()
    if state.stats.nonfinite == before:
        opt.step()

and that bucket's error-feedback residual is reset to 0, so that nothing of the skipped step
is carried into the next one.
"""

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI

import pycomm
from pycomm.distributed import staging

WIDE = (torch.float32, torch.float64)
#: Pipeline segment of the bucket's allreduce (elements; allreduce's default is 2^21). ebq
#: reserves its output buffer for the worst case, about 2x the input, before trimming it to
#: the frame; smaller segments keep that reserve (and every per-segment copy) to a fraction of
#: a large bucket (bench/hook_memory.py has the figures).
SEGMENT_COUNT = 1 << 19


class CompressHookState:
    """The codec, error feedback, warm-up and statistics of ``mpiucc_compress_hook``.

    ``codec`` and its keywords as for ``pycomm.allreduce``; ``error_feedback`` keeps, per
    bucket, what compression lost and sends it with the next step; buckets go uncompressed
    before ``start_compress_step`` and below ``min_compress_numel`` elements. ``comm`` is the
    MPI communicator (default: the process group's, else COMM_WORLD). ``stats`` is a
    ``pycomm.CommStats``. Pickles without its communicator (for checkpoints).
    """

    __slots__ = (
        "codec",
        "params",
        "error_feedback",
        "start_compress_step",
        "min_compress_numel",
        "process_group",
        "comm",
        "iteration",
        "stats",
        "residuals",
        "staging",
        "_by_param",
    )

    def __init__(
        self,
        codec: str = "ebq",
        *,
        error_feedback: bool = True,
        start_compress_step: int = 0,
        min_compress_numel: int = 1024,
        process_group: dist.ProcessGroup | None = None,
        comm: MPI.Comm | None = None,
        **params: object,
    ) -> None:
        if codec == "ebq":
            params.setdefault("error_bound", 1e-4)
            params.setdefault("mode", "rel")
        self.codec = pycomm.CodecSpec(codec=codec, **params)  # checks the settings now
        self.params = params
        self.error_feedback = error_feedback
        self.start_compress_step = start_compress_step
        self.min_compress_numel = min_compress_numel
        self.process_group = process_group
        self.comm = comm
        self.iteration = 0
        self.stats = pycomm.CommStats()
        self.residuals: dict[tuple, np.ndarray] = {}
        self._by_param: dict[int, tuple[np.ndarray, int]] = {}
        self.staging: dict[int, torch.Tensor] = {}  # device buckets' pinned host mirrors

    def communicator(self) -> MPI.Comm:
        if self.comm is None:
            self.comm = getattr(self.process_group, "comm", None) or MPI.COMM_WORLD
        return self.comm

    def residual_for(self, bucket: dist.GradBucket, dtype: np.dtype) -> np.ndarray:
        """This bucket's residual; after DDP rebuilds its buckets, carried over by parameter."""
        params = bucket.parameters()
        key = (bucket.index(), tuple(p.numel() for p in params))
        r = self.residuals.get(key)
        if r is None or r.dtype != dtype:
            r = np.zeros(sum(key[1]), dtype)
            offset = 0
            for p, n in zip(params, key[1], strict=True):
                old = self._by_param.get(id(p))
                if old is not None and old[0].dtype == dtype:
                    r[offset : offset + n] = old[0][old[1] : old[1] + n]
                offset += n
            self.residuals = {k: v for k, v in self.residuals.items() if k[0] != key[0]}
            self.residuals[key] = r
        offset = 0
        for p, n in zip(params, key[1], strict=True):
            self._by_param[id(p)] = (r, offset)
            offset += n
        return r

    def __getstate__(self) -> dict:
        skip = ("process_group", "comm", "_by_param", "staging")
        return {k: getattr(self, k) for k in self.__slots__ if k not in skip}

    def __setstate__(self, state: dict) -> None:
        self.process_group, self.comm, self._by_param, self.staging = None, None, {}, {}
        for k, v in state.items():
            setattr(self, k, v)


def mpiucc_compress_hook(
    state: CompressHookState, bucket: dist.GradBucket
) -> torch.futures.Future[torch.Tensor]:
    """Average the bucket over the ranks through state's codec (with error feedback)."""
    return _allreduce_bucket(state, bucket, compress=True)


def mpiucc_allreduce_hook(
    state: CompressHookState, bucket: dist.GradBucket
) -> torch.futures.Future[torch.Tensor]:
    """Average the bucket over the ranks uncompressed, through MPI."""
    return _allreduce_bucket(state, bucket, compress=False)


def _allreduce_bucket(
    state: CompressHookState, bucket: dist.GradBucket, compress: bool
) -> torch.futures.Future[torch.Tensor]:
    buf = bucket.buffer()
    if not buf.is_cpu:  # device buckets go through pinned host buffers, overlapped
        return staging.allreduce_bucket(state, bucket, compress)
    flat = buf if buf.dtype in WIDE else buf.float()  # fp16 and bf16 travel widened
    x = flat.detach().numpy()
    compress = (
        compress
        and state.iteration >= state.start_compress_step
        and x.size >= state.min_compress_numel
    )
    spec = state.codec if compress else pycomm.CodecSpec()
    residual = state.residual_for(bucket, x.dtype) if compress and state.error_feedback else None
    fut: torch.futures.Future[torch.Tensor] = torch.futures.Future()

    def finish(req: pycomm.Request) -> None:
        try:
            req.wait()
            if not _all_finite(x):
                state.stats.nonfinite += 1
                if residual is not None:
                    residual.fill(0)
            if flat is not buf:
                buf.copy_(flat)
            fut.set_result(buf)
        except BaseException as exc:  # the error reaches DDP through the future
            fut.set_exception(exc)

    req = pycomm.iallreduce(
        x,
        state.communicator(),
        spec,
        out=x,
        op="mean",
        residual=residual,
        stats=state.stats,
        segment=SEGMENT_COUNT,
    )
    req.add_done_callback(finish)
    if bucket.is_last():
        state.iteration += 1
    return fut


def _all_finite(x: np.ndarray) -> bool:
    """Whether x holds neither NaN nor ±Inf (min and max propagate NaN; no temporary)."""
    return x.size == 0 or bool(np.isfinite(x.min()) and np.isfinite(x.max()))
