"""DDP communication hooks that put mpiucc's codecs on the wire::

    state = CompressHookState(codec="ebq", error_bound=1e-4, mode="rel")
    ddp.register_comm_hook(state, mpiucc_compress_hook)

The hook hands each gradient bucket to ``pycomm.iallreduce`` (op="mean"), which runs on the
communicator's communication thread, so backward computation goes on meanwhile; the future
completes there, with the averaged gradients written in place into the bucket.

NaN and ±Inf in a gradient reach every rank's bucket (codecs/FORMAT.md, "Non-finite values");
a bucket whose averaged result holds one adds 1 to ``state.stats.nonfinite`` on every rank, so
that a training loop can skip the step as ``torch.amp.GradScaler`` does::

    before = state.stats.nonfinite
    loss.backward()
    if state.stats.nonfinite == before:
        opt.step()

and that bucket's error-feedback residual is reset to 0, so that nothing of the skipped step
is carried into the next one.
"""

import zlib

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI

import pycomm
from pycomm.collectives.buffers import all_finite
from pycomm.collectives.spec import make_spec
from pycomm.distributed import staging

WIDE = (torch.float32, torch.float64)


class CompressHookState:
    """The codec, error feedback, warm-up and statistics of ``mpiucc_compress_hook``.

    ``codec`` and its keywords as for ``pycomm.allreduce``; ``error_feedback`` keeps, per
    bucket, what compression lost and sends it with the next step; buckets go uncompressed
    before ``start_compress_step`` and below ``min_compress_numel`` elements. ``comm`` is the
    MPI communicator; by default it follows ``process_group`` (see ``communicator()``).
    ``stats`` is a ``pycomm.CommStats``. Pickles without its communicator (for checkpoints);
    ``free()`` releases a communicator the state made.
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
        "_made_comm",
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
        self.codec = make_spec(codec, **params)  # any spelling pycomm.allreduce takes; checked
        self.params = params
        self.error_feedback = error_feedback
        self.start_compress_step = start_compress_step
        self.min_compress_numel = min_compress_numel
        self.process_group = process_group
        self.comm = comm
        self.iteration = 0
        self.stats = pycomm.CommStats()
        self.residuals: dict[tuple, pycomm.ErrorFeedback] = {}
        self._by_param: dict[int, tuple[np.ndarray | torch.Tensor, int]] = {}
        self._made_comm = False
        self.staging: dict[int, torch.Tensor] = {}  # device buckets' pinned host mirrors

    def communicator(self) -> MPI.Comm:
        """The MPI communicator of the hook's ranks: exactly those of its process group.

        ``comm`` if given; an ``mpiucc`` group's own communicator; for another backend's group
        (gloo, or the default group when ``process_group`` is None) a communicator of exactly
        its ranks, made on the first call by the group's members together (DDP calls the hook
        for the same bucket on each) and kept. MPI_COMM_WORLD only when torch.distributed is
        not initialised. Raises RuntimeError if the group's ranks are not ranks of this MPI job.
        """
        if self.comm is None:
            group = self.process_group
            if group is None and dist.is_initialized():
                group = dist.group.WORLD
            if group is None:
                self.comm = MPI.COMM_WORLD
            elif isinstance(getattr(group, "comm", None), MPI.Intracomm):
                self.comm = group.comm
            else:
                self.comm = _comm_of_ranks(group)
                self._made_comm = True
        return self.comm

    def free(self) -> None:
        """Free the communicator this state made for its group, if any (a later call remakes it)."""
        if self._made_comm and self.comm is not None:
            self.comm.Free()
        self.comm, self._made_comm = None, False

    def residual_for(
        self, bucket: dist.GradBucket, like: np.ndarray | torch.Tensor
    ) -> pycomm.ErrorFeedback:
        """This bucket's error feedback: its worker residual of like's type, dtype and device
        (a numpy array, or a tensor for the device codecs) and the two-phase algorithm's
        server residuals. After DDP rebuilds its buckets the worker residual is carried over
        by parameter (the server residuals, kept by position, start afresh)."""
        params = bucket.parameters()
        key = (bucket.index(), tuple(p.numel() for p in params))
        fb = self.residuals.get(key)
        r = None if fb is None else fb.worker
        if r is None or not _same_kind(r, like):
            r = np.zeros(sum(key[1]), like.dtype) if isinstance(like, np.ndarray) else None
            r = torch.zeros(sum(key[1]), dtype=like.dtype, device=like.device) if r is None else r
            offset = 0
            for p, n in zip(params, key[1], strict=True):
                old = self._by_param.get(id(p))
                if old is not None and _same_kind(old[0], like):
                    r[offset : offset + n] = old[0][old[1] : old[1] + n]
                offset += n
            self.residuals = {k: v for k, v in self.residuals.items() if k[0] != key[0]}
            fb = self.residuals[key] = pycomm.ErrorFeedback(r)
        offset = 0
        for p, n in zip(params, key[1], strict=True):
            self._by_param[id(p)] = (r, offset)
            offset += n
        return fb

    def residuals_by_name(self, named: list[tuple[str, torch.Tensor]]) -> dict:
        """The error feedback for a checkpoint: each parameter's slice of its bucket's worker
        residual by name (``named``: the model's ``named_parameters()``), and every bucket's
        feedback as kept (``residuals``)."""
        params = {}
        for name, p in named:
            kept = self._by_param.get(id(p))
            if kept is not None:
                r, offset = kept
                params[name] = _copy(r[offset : offset + p.numel()])
        return {"params": params, "buckets": self.residuals, "iteration": self.iteration}

    def load_residuals_by_name(self, state: dict, named: list[tuple[str, torch.Tensor]]) -> None:
        """Restore ``residuals_by_name``'s state in a new process: a bucket laid out as saved
        takes its feedback back whole; one that DDP laid out otherwise (its first iteration
        before the rebuild) takes each parameter's worker residual (``residual_for``)."""
        self.residuals = dict(state["buckets"])
        self.iteration = state["iteration"]
        self._by_param = {id(p): (state["params"][n], 0) for n, p in named if n in state["params"]}

    def __getstate__(self) -> dict:
        skip = ("process_group", "comm", "_by_param", "_made_comm", "staging")
        return {k: getattr(self, k) for k in self.__slots__ if k not in skip}

    def __setstate__(self, state: dict) -> None:
        self.process_group, self.comm, self._by_param = None, None, {}
        self._made_comm, self.staging = False, {}
        for k, v in state.items():
            setattr(self, k, v)


def _copy(r: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
    return r.clone() if isinstance(r, torch.Tensor) else r.copy()


def _same_kind(a: object, b: object) -> bool:
    """Same array type and dtype (and device, for tensors)."""
    if type(a) is not type(b) or a.dtype != b.dtype:
        return False
    return not isinstance(a, torch.Tensor) or a.device == b.device


def _comm_of_ranks(group: dist.ProcessGroup) -> MPI.Intracomm:
    """A communicator of MPI_COMM_WORLD's ranks that are `group`'s, in group rank order.

    Collective over `group` (an all_gather of each member's MPI rank), then over its members
    in MPI (Create_group): only the group's members take part.
    """
    world = MPI.COMM_WORLD
    mine = torch.tensor([world.Get_rank(), world.Get_size()], dtype=torch.int64)
    got = [torch.empty_like(mine) for _ in range(group.size())]
    dist.all_gather(got, mine, group=group)
    mpi_ranks = mpi_ranks_of_group([(int(t[0]), int(t[1])) for t in got])
    members = world.Get_group().Incl(mpi_ranks)
    try:
        comm = world.Create_group(members, tag=zlib.crc32(repr(mpi_ranks).encode()) & 0x7FFF)
    finally:
        members.Free()
    if comm.Get_rank() != group.rank() or comm.Get_size() != group.size():
        raise RuntimeError("mpiucc hook: the MPI communicator does not match the process group")
    return comm


def mpi_ranks_of_group(members: list[tuple[int, int]]) -> list[int]:
    """MPI_COMM_WORLD ranks of a group's members from each one's (MPI rank, MPI world size).

    Raises RuntimeError unless they are distinct ranks of one MPI job.
    """
    ranks = [r for r, _ in members]
    sizes = {n for _, n in members}
    if (
        len(sizes) != 1
        or len(set(ranks)) != len(ranks)
        or not all(0 <= r < min(sizes) for r in ranks)
    ):
        raise RuntimeError(
            f"mpiucc hook: the process group's members are MPI ranks {ranks} of MPI worlds of "
            f"sizes {sorted(sizes)}, not distinct ranks of one MPI job; launch with mpiexec or "
            "pass CompressHookState(comm=...)"
        )
    return ranks


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
    state: CompressHookState, bucket: dist.GradBucket, compress: bool, staged: bool = False
) -> torch.futures.Future[torch.Tensor]:
    """The hook's one decision (widen, compress or not, the step count), then the bucket's
    allreduce: on the CPU here; a device bucket (or any, ``staged``) through pinned host
    buffers (``staging``)."""
    buf = bucket.buffer()
    flat = buf if buf.dtype in WIDE else buf.float()  # fp16 and bf16 travel widened
    compress = (
        compress
        and state.iteration >= state.start_compress_step
        and flat.numel() >= state.min_compress_numel
    )
    spec = state.codec if compress else pycomm.CodecSpec()
    if bucket.is_last():
        state.iteration += 1
    if staged or not buf.is_cpu:  # device buckets go through pinned host buffers, overlapped
        return staging.allreduce_bucket(state, bucket, flat, spec, compress)
    x = flat.detach().numpy()
    residual = state.residual_for(bucket, x) if compress and state.error_feedback else None
    fut: torch.futures.Future[torch.Tensor] = torch.futures.Future()

    def finish(req: pycomm.Request) -> None:
        try:
            req.wait()
            if not all_finite(x):
                state.stats.nonfinite += 1
                if residual is not None:
                    residual.reset()
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
        segment=staging.SEGMENT_COUNT,
    )
    req.add_done_callback(finish)
    return fut
