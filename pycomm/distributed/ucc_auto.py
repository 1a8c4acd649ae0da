"""``MPIUCC_COLLECTIVES=auto``: each collective and size class on the library measured faster.

For every (collective, size class) key a group meets, its first calls alternate between MPI
(``ops``) and UCC (``ucc_ops``) and time themselves from posting to the end of ``finish``;
the first call on each library is a warm-up (UCC's makes the team), the next ``SAMPLES`` are
kept. At the key's next call the ranks agree on the slowest rank's median of each library
(one allreduce MAX of two float64 on the group's communicator) and the key settles on the
faster one: a decision made from agreed values only, so every rank takes the same library on
every call. The keys are shared by every rank too: a collective's name and the size class of
bytes that every rank passes alike (powers of 4); gather, scatter and the all-to-alls, whose
sizes may differ between ranks, have one key each for any size. A measured call that raises
keeps no sample; a library without samples counts as infinitely slow.

Every call's results are the library's own (bitwise MPI's where the test inputs sum exactly),
measured or not. ``Auto`` stands in for an ops module: the backend calls
``Auto.allreduce(auto, ...)`` as it calls ``ops.allreduce(comm, ...)``.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np
import torch
from mpi4py import MPI

from pycomm.collectives.engine import Engine
from pycomm.distributed import ops, ucc_ops
from pycomm.distributed.work import Started

WARMUP = 1  # calls per library before the kept samples (UCC's first makes the team)
SAMPLES = 3  # calls per library kept for the choice
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


class _Key:
    """One (collective, size class): calls so far, samples per library, the settled choice."""

    __slots__ = ("calls", "samples", "choice", "agreed")

    def __init__(self) -> None:
        self.calls = 0
        self.samples: dict[str, list[float]] = {"mpi": [], "ucc": []}
        self.choice: str | None = None
        self.agreed: tuple[float, float] | None = None  # slowest rank's medians (s): mpi, ucc


class Auto:
    """A group's automatic choice between MPI and UCC, per collective and size class."""

    __slots__ = ("engine", "ucc", "keys")

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.ucc = ucc_ops.UccComm(engine)
        self.keys: dict[tuple[str, int], _Key] = {}

    def _run(self, name: str, nbytes: int | None, *args: Any) -> Started:
        """Collective ``name`` on the key's library: measured while unsettled."""
        key = (name, ANY_SIZE if nbytes is None else size_class(nbytes))
        state = self.keys.get(key)
        if state is None:
            state = self.keys[key] = _Key()
        if state.choice is None and state.calls == 2 * (WARMUP + SAMPLES):
            self._settle(state, name)
        if state.choice is not None:
            return self._call(state.choice, name, args)
        lib = ("mpi", "ucc")[state.calls % 2]  # alternate: drift in load hits both alike
        kept = state.calls >= 2 * WARMUP
        state.calls += 1
        t0 = time.perf_counter()
        reqs, finish, keep = self._call(lib, name, args)

        def timed_finish() -> None:
            if finish is not None:
                finish()
            if kept:
                state.samples[lib].append(time.perf_counter() - t0)

        return reqs, timed_finish, keep

    def _call(self, lib: str, name: str, args: tuple) -> Started:
        if lib == "mpi":
            return getattr(ops, name)(self.engine.comm, *args)
        return getattr(ucc_ops, name)(self.ucc, *args)

    def _settle(self, state: _Key, name: str) -> None:
        """Agree on the slowest rank's median per library; keep the faster (MPI on a tie)."""
        mine = [statistics.median(s) if s else np.inf for s in state.samples.values()]
        v = np.array(mine, dtype=np.float64)
        comm = self.engine.comm
        self.engine.wait(
            [comm.Iallreduce(MPI.IN_PLACE, v, op=MPI.MAX)], f"auto's choice for {name}"
        )
        state.agreed = (float(v[0]), float(v[1]))
        state.choice = "ucc" if v[1] < v[0] else "mpi"

    def settled_on_mpi(self, name: str, nbytes: int) -> bool:
        """Whether the key of ``name`` with ``nbytes`` has settled on MPI (the backend's
        inline all_reduce path asks)."""
        state = self.keys.get((name, size_class(nbytes)))
        return state is not None and state.choice == "mpi"

    def decisions(self) -> dict[str, dict[str, Any]]:
        """Each key met so far: ``on`` (mpi, ucc or measuring) and the agreed medians (µs)."""
        out = {}
        for (name, c), state in sorted(self.keys.items()):
            row: dict[str, Any] = {"on": state.choice or "measuring"}
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
