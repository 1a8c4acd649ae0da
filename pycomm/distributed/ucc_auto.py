"""``MPIUCC_COLLECTIVES=auto``: each collective and size class on the library measured faster.

For every (collective, size class) key a group meets, the chooser (``pycomm.chooser``, knobs
``LIBRARY``) times MPI (``ops``) and UCC (``ucc_ops``) in turns on real calls: the first call
on each library is a warm-up (UCC's makes the team), the next ones are timed, each after a
barrier (``take``). Each library is timed on the path it takes once chosen: a call on the
general path from posting to the end of ``finish``; a blocking all_reduce on MPI by the
backend, around its inline compiled call (``ProcessGroupMpiucc._allreduce_inline``), which is
what such a call runs once MPI is kept. At the key's next call after the round the ranks agree
on the slowest rank's median of each library (one allreduce MAX of two float64 on the group's
communicator) and keep the faster one (MPI on a tie) as long as the chooser says; then a round
times both again, so that a changed link or load can overturn the choice. Every step follows
from the key's call count and agreed values only (a call is counted when it starts, its time
kept when it ends), so every rank takes the same library on every call. The keys are shared by
every rank too: a collective's name and the size class of bytes that every rank passes alike
(powers of 4); gather, scatter and the all-to-alls, whose sizes may differ between ranks, have
one key each for any size. A measured call that raises keeps no time: a library without
times counts as infinitely slow.

Every call's results are the library's own (bitwise MPI's where the test inputs sum exactly),
measured or not. ``Auto`` stands in for an ops module: the backend calls
``Auto.allreduce(auto, ...)`` as it calls ``ops.allreduce(comm, ...)``.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from mpi4py import MPI

from pycomm.chooser import KNOBS, Chooser
from pycomm.collectives.engine import Engine
from pycomm.distributed import ops, ucc_ops
from pycomm.distributed.work import Started

LIBRARY = KNOBS["library"]  # the chooser's knobs for this choice
LIBRARIES = ("mpi", "ucc")  # MPI first: the default
ROUND = len(LIBRARIES) * (LIBRARY.warmup + LIBRARY.samples)  # the calls of a measuring round
ANY_SIZE = -1  # the size class of collectives whose sizes differ between ranks


def size_class(nbytes: int) -> int:
    """c for nbytes in [4**c, 4**(c + 1)); 0 for 0 bytes."""
    return (nbytes.bit_length() - 1) // 2 if nbytes > 0 else 0


def class_range(c: int) -> str:
    """A size class as text: '4 KiB-16 KiB' (the upper end excluded), or 'any size'."""
    if c == ANY_SIZE:
        return "any size"
    return f"{_size(4**c if c else 0)}-{_size(4 ** (c + 1))}"


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def _nbytes(tensors: list[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


class Key(Chooser):
    """One (collective, size class): the chooser's state and the last round's agreed medians."""

    __slots__ = ("agreed",)

    def __init__(self) -> None:
        super().__init__(LIBRARY, LIBRARIES)
        self.new_round(LIBRARIES)
        self.agreed: tuple[float, float] | None = None  # slowest rank's medians (s): mpi, ucc

    def library(self) -> str:
        """The library of the key's next call: the kept one, else the round's next."""
        return self.current() or self.next_trial() or LIBRARIES[0]

    def take(self, lib: str) -> Callable[[float], None] | None:
        """Count a call on ``lib`` (the key's ``library()``); what keeps its seconds once it
        has succeeded, or None where it is not timed."""
        if self.current() is not None:
            self.since += 1
            return None
        self.measured(lib, math.inf)  # counted now, alike on every rank; its time once done
        got = self.samples[lib]
        if len(got) <= self.knobs.warmup:
            return None
        return functools.partial(got.__setitem__, len(got) - 1)


class Auto:
    """A group's automatic choice between MPI and UCC, per collective and size class."""

    __slots__ = ("engine", "ucc", "keys")

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.ucc = ucc_ops.UccComm(engine)
        self.keys: dict[tuple[str, int], Key] = {}

    def key(self, name: str, nbytes: int | None) -> Key:
        """The key of a call of ``name`` with ``nbytes`` (None: any size), its round decided
        first where one has just ended: an agreement on the group's communicator, so ask it
        where the group's collectives run (the engine's job, or a call holding the engine)."""
        k = (name, ANY_SIZE if nbytes is None else size_class(nbytes))
        state = self.keys.get(k)
        if state is None:
            state = self.keys[k] = Key()
        if state.current() is None:
            if state.kept is not None:  # its keep is over: time both again
                state.kept = None
                state.new_round(LIBRARIES)
            elif state.next_trial() is None:  # a round has ended
                self._settle(state, name)
        return state

    def take(self, state: Key, lib: str) -> Callable[[float], None] | None:
        """``state.take(lib)``, and before a timed call a barrier on the communicator: the
        ranks start it together, so that no rank's sample holds its wait for a rank still
        leaving the call before (on a busy machine that wait, a library's skew charged to the
        other's next call, made the two libraries' times alike)."""
        record = state.take(lib)
        if record is not None:
            comm = self.engine.comm
            self.engine.wait([comm.Ibarrier()], "auto's timed call")
        return record

    def _run(self, name: str, nbytes: int | None, *args: Any) -> Started:
        """Collective ``name`` on the key's library, timed while measuring."""
        state = self.key(name, nbytes)
        lib = state.library()
        record = self.take(state, lib)
        if record is None:
            return self._call(lib, name, args)
        t0 = time.perf_counter()
        reqs, finish, keep = self._call(lib, name, args)

        def timed_finish() -> None:
            if finish is not None:
                finish()
            record(time.perf_counter() - t0)

        return reqs, timed_finish, keep

    def _call(self, lib: str, name: str, args: tuple) -> Started:
        if lib == "mpi":
            return getattr(ops, name)(self.engine.comm, *args)
        return getattr(ucc_ops, name)(self.ucc, *args)

    def _settle(self, state: Key, name: str) -> None:
        """Agree on the slowest rank's median per library; keep the faster (MPI on a tie)
        as long as the chooser says."""
        mine = state.times()
        v = np.array([mine.get(lib, np.inf) for lib in LIBRARIES], dtype=np.float64)
        comm = self.engine.comm
        self.engine.wait(
            [comm.Iallreduce(MPI.IN_PLACE, v, op=MPI.MAX)], f"auto's choice for {name}"
        )
        state.decide(dict(zip(LIBRARIES, map(float, v), strict=True)))
        state.agreed = (float(v[0]), float(v[1]))

    def decisions(self) -> dict[str, dict[str, Any]]:
        """Each key met so far: ``on`` (mpi, ucc or measuring) and the agreed medians (µs)."""
        out = {}
        for (name, c), state in sorted(self.keys.items()):
            row: dict[str, Any] = {"on": state.current() or "measuring"}
            if state.agreed is not None:
                row["mpi_us"], row["ucc_us"] = (round(t * 1e6, 1) for t in state.agreed)
            out[f"{name} {class_range(c)}"] = row
        return out

    # -- the ops interface: each a key and the arguments of its namesake in ops --
    def allreduce(self, tensors: list[torch.Tensor], op: int) -> Started:
        return self._run("allreduce", _nbytes(tensors), tensors, op)

    def allreduce_coalesced(self, tensors: list[torch.Tensor], op: int) -> Started:
        return ops.allreduce_coalesced(self.engine.comm, tensors, op)  # MPI's on either

    def broadcast(self, tensors: list[torch.Tensor], root: int) -> Started:
        return self._run("broadcast", _nbytes(tensors), tensors, root)

    def reduce(self, tensors: list[torch.Tensor], root: int, op: int) -> Started:
        return self._run("reduce", _nbytes(tensors), tensors, root, op)

    def allgather(self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor]) -> Started:
        return self._run("allgather", sum(_nbytes(o) for o in outputs), outputs, inputs)

    def allgather_into_tensor(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor]
    ) -> Started:
        return self._run("allgather_into_tensor", _nbytes(outputs), outputs, inputs)

    def reduce_scatter(
        self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], op: int
    ) -> Started:
        nbytes = sum(_nbytes(i) for i in inputs)  # the same list of sizes on every rank
        return self._run("reduce_scatter", nbytes, outputs, inputs, op)

    def reduce_scatter_tensor(
        self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], op: int
    ) -> Started:
        return self._run("reduce_scatter_tensor", _nbytes(inputs), outputs, inputs, op)

    def gather(
        self, outputs: list[list[torch.Tensor]], inputs: list[torch.Tensor], root: int
    ) -> Started:
        return self._run("gather", None, outputs, inputs, root)

    def scatter(
        self, outputs: list[torch.Tensor], inputs: list[list[torch.Tensor]], root: int
    ) -> Started:
        return self._run("scatter", None, outputs, inputs, root)

    def alltoall(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor]) -> Started:
        return self._run("alltoall", None, outputs, inputs)

    def alltoall_single(
        self, out: torch.Tensor, t: torch.Tensor, out_splits: list[int], in_splits: list[int]
    ) -> Started:
        return self._run("alltoall_single", None, out, t, out_splits, in_splits)

    def barrier(self) -> Started:
        return self._run("barrier", 0)
