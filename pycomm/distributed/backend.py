"""The "mpiucc" process group: torch.distributed collectives on an MPI communicator.

Torch uses a Python subclass of ``ProcessGroup`` returned by a registered creator as the group
itself and calls the methods below (the names torch's Python API and its C++ trampoline use).
The group owns its communicator, and that communicator's engine (``pycomm.collectives.engine``)
orders, waits and times out: blocking calls run inline when the group is idle; ``async_op=True``
and DDP's calls run on the engine's thread. Point-to-point posts MPI requests at once.

The ranks' arguments are checked against each other (one 160-byte allreduce per collective)
only when asked, as torch does: ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` or ``MPIUCC_CHECK=1`` when
the group is made (``checks``); by default a collective costs what MPI's costs.
"""

from __future__ import annotations

import functools
import time
import zlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from mpi4py import MPI
from torch._C._distributed_c10d import _DistributedBackendOptions

from pycomm.collectives import checking, hot
from pycomm.collectives.engine import engine_of
from pycomm.distributed import checks, compression, ops, p2p, transport
from pycomm.distributed._buffers import DIRECT_OPS, DIRECT_TYPES, op_code
from pycomm.distributed.p2p import P2PWork
from pycomm.distributed.store import MPIStore
from pycomm.distributed.work import DoneWork, MpiWork, timeout_seconds

_from_address = MPI.buffer.fromaddress
_IN_PLACE = MPI.IN_PLACE
_monotonic = time.monotonic
_perf_counter = time.perf_counter


class ProcessGroupMpiucc(dist.ProcessGroup):
    """A torch process group over an MPI communicator that it owns (and frees on shutdown)."""

    def __init__(
        self, comm: MPI.Intracomm, rank: int, size: int, timeout: timedelta, name: str = "0"
    ) -> None:
        super().__init__(rank, size)
        if comm.Get_rank() != rank or comm.Get_size() != size:
            raise ValueError(
                f"communicator is rank {comm.Get_rank()} of {comm.Get_size()}, "
                f"torch expects {rank} of {size}"
            )
        self._comm = comm
        self._name, self._desc = name, ""
        self._timeout_s = timeout_seconds(timeout, 1800.0)
        self._engine = engine_of(comm, owned=True)
        self._engine.where = f"rank {rank} of {size} in group {name!r}"
        self._engine.timeout_s = self._timeout_s
        self._checked = checking.enabled()
        self._done = DoneWork()  # shared by blocking all_reduce calls on the fast path
        # The library of the uncompressed collectives (transport.py): ops over the
        # communicator, or ucc_ops over the group's UCC team.
        self._collectives = "mpi"
        self._ops: Any = ops
        self._on: Any = comm
        self.set_collectives(transport.from_env())
        transport.track(self)
        self.rendezvous_store: MPIStore | None = None  # closed with the group (default group)
        self.compression: compression.Compression | None = None  # set_compression
        # Bound methods the fast path calls (an attribute lookup saved is 50 ns saved).
        self._try_begin = self._engine.try_begin
        self._exec_release = self._engine.exec_lock.release
        self._iallreduce = comm.Iallreduce
        self._compiled: dict[tuple, Any] = {}  # the compiled all_reduce by dtype and op

    # -- identity and lifetime --
    def getBackendName(self) -> str:  # noqa: N802 (torch's name)
        return "mpiucc"

    # torch keeps a group's name and description on its C++ backends, which a group made in
    # Python has none of ("ProcessGroup name not set"): c10d's bookkeeping (DeviceMesh,
    # destroy_process_group, functional collectives) reads them here instead.
    @property
    def group_name(self) -> str:
        return self._name

    def _set_group_name(self, name: str) -> None:
        self._name = name

    @property
    def group_desc(self) -> str:
        return self._desc

    def _set_group_desc(self, desc: str) -> None:
        self._desc = desc

    @property
    def comm(self) -> MPI.Intracomm:
        """The group's MPI communicator (use it only while no collective of the group runs)."""
        return self._comm

    @property
    def collectives(self) -> str:
        """``mpi``, ``ucc`` or ``auto``: what the group's uncompressed collectives run on."""
        return self._collectives

    @property
    def on_ucc(self) -> dict[str, str]:
        """Which collectives the group sends through UCC: ``{what: on}`` where on is ``ucc``,
        ``mpi`` or ``measuring`` (auto's keys so far, by size class), or ``ucc`` for every
        collective the UCC layer runs; empty on MPI."""
        if self._collectives == "mpi":
            return {}
        if self._collectives == "ucc":
            from pycomm.distributed.ucc_ops import ON_UCC

            return dict.fromkeys(ON_UCC, "ucc")
        return {k: v["on"] for k, v in self._on.decisions().items()}

    def set_collectives(self, choice: str) -> None:
        """Run the group's uncompressed collectives on ``mpi``, ``ucc`` or ``auto`` (see
        ``transport``); every rank of the group must choose alike, between collectives."""
        self._ops, self._on = transport.ops_for(choice, self._engine)
        self._collectives = transport.resolve(choice)

    def set_timeout(self, timeout: timedelta) -> None:
        self._timeout_s = timeout_seconds(timeout, self._timeout_s)
        self._engine.timeout_s = self._timeout_s

    def shutdown(self) -> None:
        broken = self._engine.broken is not None
        self._engine.close()
        if not broken and self._comm != MPI.COMM_NULL:
            self._comm.Free()  # its engine's delete callback runs (already closed)
        if self.rendezvous_store is not None:
            self.rendezvous_store.close()
            self.rendezvous_store = None

    def abort(self) -> None:
        self._engine.broken = "the group was aborted"

    # -- the engine --
    def _check_local(self, what: str, check: Callable[..., None], *args: Any) -> None:
        """Raise for this rank's invalid tensors before any MPI call; in a checked group the
        other ranks, waiting in the agreement, raise PeerArgumentError."""
        try:
            check(self.size(), self.rank(), *args)
        except (TypeError, ValueError) as exc:
            if self._checked:
                self._engine.run(functools.partial(self._refuse, what, exc), what)
            raise

    def _refuse(self, what: str, error: BaseException, comm: Any) -> None:
        self._engine.agree_failed(what, error)

    def _run(self, start: Any, opts: Any, what: str, result: Any, *args: Any) -> dist.Work:
        """Run start() as the group's next collective; ``args`` are what ranks must agree on."""
        timeout = timeout_seconds(opts.timeout, self._timeout_s)
        job = functools.partial(self._execute, start, timeout, what, args)
        return self._submit(job, opts, what, result, timeout)

    def _submit(
        self, job: Any, opts: Any, what: str, result: Any, timeout: float | None = None
    ) -> dist.Work:
        """job(comm) as the group's next collective: inline when the group is idle and the
        call blocks, else behind the queued ones on the engine's thread."""
        if not opts.asyncOp:
            self._engine.run(job, what)
            return DoneWork(result)
        if timeout is None:
            timeout = timeout_seconds(opts.timeout, self._timeout_s)
        work = MpiWork(result, what, timeout)
        self._engine.enqueue(job, work._finish)
        return work

    def _execute(self, start: Any, timeout: float, what: str, args: tuple, comm: Any) -> None:
        """One collective, run by the engine (which refuses it once the group is broken)."""
        engine = self._engine
        deadline = _monotonic() + timeout
        if self._checked:
            engine.agree(what, checks.digest(what, *args))
        reqs, finish, keep = start()
        engine.wait(reqs, what, deadline)
        if finish is not None:
            finish()
        del keep

    # -- reductions --
    def allreduce(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        if opts is None:
            opts = dist.AllreduceOptions()
        if not opts.asyncOp and len(tensors) == 1 and self._allreduce_inline(tensors[0], opts):
            return self._done
        spec = self.compression and self.compression.spec_for("all_reduce", tensors, opts.reduceOp)
        if spec:
            job = compression.all_reduce_job(
                self.compression, spec, self._engine, tensors[0], opts.reduceOp
            )
            return self._submit(job, opts, "compressed all_reduce", tensors)
        start = functools.partial(self._ops.allreduce, self._on, tensors, op_code(opts.reduceOp))
        return self._run(start, opts, "allreduce", tensors, tensors, op_code(opts.reduceOp))

    def _allreduce_inline(self, t: torch.Tensor, opts: Any) -> bool:
        """The fast path of a blocking all_reduce: one plain tensor of a type and op MPI reduces
        directly, the group idle. True when done; small all_reduce calls are latency-bound and
        every 100 ns shows, hence the bound methods and the single request. On auto, a call
        whose turn is MPI's runs here, and is timed here while auto measures."""
        datatype = DIRECT_TYPES.get(t.dtype)
        if datatype is None or not t.is_cpu or not t.is_contiguous():
            return False
        auto = self._collectives == "auto"
        if self._ops is not ops and not auto:
            return False
        code = op_code(opts.reduceOp)
        mop = DIRECT_OPS.get(code)
        policy = self.compression
        if policy is not None and policy.all_reduce.compressed:
            return False
        if mop is None or self._checked or not self._try_begin():
            return False
        try:
            if self._engine.broken is not None:
                self._engine.check_usable()
            record = None
            if auto:  # asked while holding the engine: the key's turns go in call order
                key = self._on.key("allreduce", t.nbytes)
                if key.library() != "mpi":
                    return False
                record = self._on.take(key, "mpi")
                t0 = _perf_counter()
            compiled = self._compiled.get((t.dtype, code), False)
            if compiled is False:  # made once per dtype and op
                compiled = self._compiled[t.dtype, code] = hot.in_place(
                    self._engine, datatype, mop, self._timeout_of
                )
            if compiled is not None:
                compiled.run(t.data_ptr(), t.nbytes, opts)
            else:
                req = self._iallreduce(
                    _IN_PLACE, [_from_address(t.data_ptr(), t.nbytes), datatype], mop
                )
                if not req.Test():
                    self._engine.wait([req], "allreduce", _monotonic() + self._timeout_of(opts))
            if record is not None:
                record(_perf_counter() - t0)
        finally:
            self._exec_release()
        return True

    def _timeout_of(self, opts: Any) -> float:
        """The seconds a call with these options may wait."""
        return timeout_seconds(opts.timeout, self._timeout_s)

    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else dist.AllreduceCoalescedOptions()
        start = functools.partial(
            self._ops.allreduce_coalesced, self._on, tensors, op_code(opts.reduceOp)
        )
        return self._run(
            start, opts, "allreduce_coalesced", tensors, tensors, op_code(opts.reduceOp)
        )

    def reduce(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else dist.ReduceOptions()
        start = functools.partial(
            self._ops.reduce, self._on, tensors, opts.rootRank, op_code(opts.reduceOp)
        )
        return self._run(
            start, opts, "reduce", tensors, tensors, opts.rootRank, op_code(opts.reduceOp)
        )

    def reduce_scatter(
        self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], opts: Any = None
    ) -> dist.Work:
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        self._check_local("reduce_scatter", checks.reduce_scatter, outputs, inputs)
        start = functools.partial(
            self._ops.reduce_scatter, self._on, outputs, inputs, op_code(opts.reduceOp)
        )
        return self._run(
            start, opts, "reduce_scatter", outputs, inputs, _dtypes(outputs), op_code(opts.reduceOp)
        )

    def reduce_scatter_tensor_coalesced(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        self._check_local("reduce_scatter_tensor", checks.reduce_scatter_tensor, outputs, inputs)
        policy = self.compression
        spec = policy and policy.spec_for("reduce_scatter", inputs, opts.reduceOp)
        if spec:
            job = compression.reduce_scatter_job(
                policy, spec, self._engine, outputs[0], inputs[0], opts.reduceOp
            )
            return self._submit(job, opts, "compressed reduce_scatter", outputs)
        start = functools.partial(
            self._ops.reduce_scatter_tensor, self._on, outputs, inputs, op_code(opts.reduceOp)
        )
        return self._run(
            start, opts, "reduce_scatter_tensor", outputs, outputs, inputs, op_code(opts.reduceOp)
        )

    def reduce_scatter_single(
        self, output: torch.Tensor, input: torch.Tensor, opts: Any = None
    ) -> dist.Work:
        return self.reduce_scatter_tensor_coalesced([output], [input], opts)

    _reduce_scatter_base = reduce_scatter_single
    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced

    # -- data movement --
    def broadcast(self, tensors: list[torch.Tensor], opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else dist.BroadcastOptions()
        start = functools.partial(self._ops.broadcast, self._on, tensors, opts.rootRank)
        return self._run(start, opts, "broadcast", tensors, tensors, opts.rootRank)

    def allgather(
        self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        opts = opts if opts is not None else dist.AllgatherOptions()
        self._check_local("allgather", checks.all_gather, outputs, inputs)
        start = functools.partial(self._ops.allgather, self._on, outputs, inputs)
        return self._run(start, opts, "allgather", outputs, outputs, _dtypes(inputs))

    def allgather_coalesced(
        self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        """outputs[r][i] receives rank r's inputs[i] (allgather's lists, transposed)."""
        if len(outputs) != self.size():
            raise ValueError(
                f"all_gather_coalesced: {len(outputs)} output lists, not {self.size()}"
            )
        return self.allgather([list(col) for col in zip(*outputs, strict=True)], inputs, opts)

    def allgather_into_tensor_coalesced(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        opts = opts if opts is not None else dist.AllgatherOptions()
        self._check_local("all_gather_into_tensor", checks.all_gather_into_tensor, outputs, inputs)
        spec = self.compression and self.compression.spec_for("all_gather", inputs)
        if spec:
            job = compression.all_gather_job(
                self.compression, spec, self._engine, outputs[0], inputs[0]
            )
            return self._submit(job, opts, "compressed all_gather", outputs)
        start = functools.partial(self._ops.allgather_into_tensor, self._on, outputs, inputs)
        return self._run(start, opts, "all_gather_into_tensor", outputs, outputs, inputs)

    def all_gather_single(
        self, output: torch.Tensor, input: torch.Tensor, opts: Any = None
    ) -> dist.Work:
        return self.allgather_into_tensor_coalesced([output], [input], opts)

    _allgather_base = all_gather_single
    all_gather_single_coalesced = allgather_into_tensor_coalesced

    def gather(
        self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        opts = opts if opts is not None else dist.GatherOptions()
        self._check_local("gather", checks.gather, outputs, inputs, opts.rootRank)
        start = functools.partial(self._ops.gather, self._on, outputs, inputs, opts.rootRank)
        return self._run(start, opts, "gather", outputs, _dtypes(inputs), opts.rootRank)

    def scatter(
        self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], opts: Any = None
    ) -> dist.Work:
        opts = opts if opts is not None else dist.ScatterOptions()
        self._check_local("scatter", checks.scatter, outputs, inputs, opts.rootRank)
        start = functools.partial(self._ops.scatter, self._on, outputs, inputs, opts.rootRank)
        return self._run(start, opts, "scatter", outputs, _dtypes(outputs), opts.rootRank)

    def alltoall(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any = None
    ) -> dist.Work:
        opts = opts if opts is not None else dist.AllToAllOptions()
        self._check_local("all_to_all", checks.all_to_all, outputs, inputs)
        start = functools.partial(self._ops.alltoall, self._on, outputs, inputs)
        return self._run(start, opts, "all_to_all", outputs, len(outputs))

    def all_to_all_single(
        self,
        output: torch.Tensor,
        input: torch.Tensor,
        output_split_sizes: list[int],
        input_split_sizes: list[int],
        opts: Any = None,
    ) -> dist.Work:
        opts = opts if opts is not None else dist.AllToAllOptions()
        out_splits, in_splits = list(output_split_sizes), list(input_split_sizes)
        self._check_local(
            "all_to_all_single", checks.all_to_all_single, output, input, out_splits, in_splits
        )
        start = functools.partial(
            self._ops.alltoall_single,
            self._on,
            output,
            input,
            out_splits,
            in_splits,
        )
        return self._run(start, opts, "all_to_all_single", [output], output.dtype)

    alltoall_base = all_to_all_single

    def barrier(self, opts: Any = None) -> dist.Work:
        opts = opts if opts is not None else dist.BarrierOptions()
        return self._run(functools.partial(self._ops.barrier, self._on), opts, "barrier", None)

    # -- point-to-point --
    def send(self, tensors: list[torch.Tensor], dst: int, tag: int = 0) -> dist.Work:
        self._engine.check_usable()
        posted = p2p.isend(self._engine, self._comm, tensors[0], dst, tag)
        return P2PWork(posted, tensors, self._timeout_s)

    def recv(self, tensors: list[torch.Tensor], src: int, tag: int = 0) -> dist.Work:
        self._engine.check_usable()
        posted = p2p.irecv(self._engine, self._comm, tensors[0], src, tag)
        return P2PWork(posted, tensors, self._timeout_s)

    def recv_anysource(self, tensors: list[torch.Tensor], tag: int = 0) -> dist.Work:
        return self.recv(tensors, MPI.ANY_SOURCE, tag)


def _dtypes(tensors: list[torch.Tensor]) -> list[torch.dtype]:
    """What ranks of an uneven gather or scatter must agree on: dtypes, not sizes."""
    return [t.dtype for t in tensors]


# -- the creator and the communicators --

_world: dict[str, Any] = {"comm": None}


def world_comm(rank: int, size: int) -> MPI.Intracomm:
    """COMM_WORLD if torch's ranks are MPI's, else COMM_WORLD reordered by torch rank."""
    world = MPI.COMM_WORLD
    if world.Get_size() != size:
        raise RuntimeError(
            f"mpiucc: torch's world has {size} ranks but MPI_COMM_WORLD has {world.Get_size()}; "
            "launch with mpiexec -n WORLD_SIZE"
        )
    if world.Get_rank() == rank:
        return world
    return world.Split(0, rank)


def _subgroup_comm(ranks: list[int], group_id: str) -> MPI.Intracomm:
    """A communicator of the world ranks `ranks`, made by those ranks alone."""
    base = _world["comm"]
    if base is None:
        base = world_comm(dist.get_rank(), dist.get_world_size())
    group = base.Get_group().Incl(ranks)
    tag = zlib.crc32(group_id.encode()) & 0x7FFF
    try:
        return base.Create_group(group, tag)
    finally:
        group.Free()


def create(opts: _DistributedBackendOptions, backend_options: Any = None) -> ProcessGroupMpiucc:
    """The creator registered with torch (extended API: it gets the group's global ranks)."""
    ranks = list(opts.global_ranks_in_group)
    if not ranks:  # the default group
        base = world_comm(opts.group_rank, opts.group_size)
        _world["comm"] = base
        transport.init_world(base)
        comm = base.Dup()
    else:
        comm = _subgroup_comm(ranks, str(opts.group_id))
    pg = ProcessGroupMpiucc(
        comm, opts.group_rank, opts.group_size, opts.timeout, str(opts.group_id)
    )
    if not ranks:
        pg.rendezvous_store = _mpi_store_under(opts.store)
    return pg


def _mpi_store_under(store: dist.Store) -> MPIStore | None:
    """The MPIStore under torch's PrefixStores, if the world was made by mpi://."""
    while isinstance(store, dist.PrefixStore):
        store = store.underlying_store
    return store if isinstance(store, MPIStore) else None
