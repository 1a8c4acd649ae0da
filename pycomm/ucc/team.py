"""The process's UCC context and one UCC team per communicator, made on first use.

A team is made from a communicator's engine (``pycomm.collectives.engine``), as one of that
communicator's collectives: UCC's out-of-band allgather, which exchanges the members' addresses
while the team is made, is an ``MPI_Iallgather`` of bytes on the communicator itself (no socket,
no store), and the engine waits for it under its deadline. The team lives on the engine
(``Engine.attached``) and is destroyed when the engine closes, unless the communicator broke.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
from mpi4py import MPI

from pycomm.collectives.engine import Engine
from pycomm.ucc import _ucc, unavailable_reason

_context: _ucc.Context | None = None
_lock = threading.Lock()
_KEY = "ucc_team"


def context() -> _ucc.Context:
    """The process's UCC library and context (made on first call, where ``init_context`` did
    not make it; never destroyed)."""
    global _context
    if _ucc is None:
        raise RuntimeError(f"pycomm.ucc: {unavailable_reason()}")
    if _context is None:
        with _lock:
            if _context is None:
                _context = _ucc.Context()
    return _context


def init_context(comm: MPI.Comm) -> _ucc.Context:
    """Make the process's context collectively over ``comm`` (the world's communicator: every
    later team's members must be in it), so that UCX may connect its members over shared
    memory. Call it on every rank of comm before any team is made; later calls return it."""
    global _context
    if _ucc is None:
        raise RuntimeError(f"pycomm.ucc: {unavailable_reason()}")
    with _lock:
        if _context is None:
            _context = _ucc.Context(_oob(comm), comm.Get_rank(), comm.Get_size())
    return _context


def _oob(comm: MPI.Comm) -> Callable[[int, int, int], MPI.Request]:
    """UCC's out-of-band allgather over ``comm``: nbytes at src from every rank into dst."""
    size = comm.Get_size()

    def allgather(src: int, dst: int, nbytes: int) -> MPI.Request:
        send = [MPI.buffer.fromaddress(src, nbytes), MPI.BYTE]
        recv = [MPI.buffer.fromaddress(dst, nbytes * size), MPI.BYTE]
        return comm.Iallgather(send, recv)

    return allgather


def team_of(engine: Engine, deadline: float | None = None, what: str = "") -> _ucc.Team:
    """The UCC team of the engine's communicator, made by the first call.

    The first call is collective over the communicator: make it where the engine runs its
    collectives (a job of ``Engine.run`` or ``enqueue``), as every rank does at that point.
    A failed or late creation breaks the communicator as any collective would; ``what`` is the
    collective that asked for the team, for the error.
    """
    team = engine.attached.get(_KEY)
    if team is None:
        comm = engine.comm
        team = _ucc.Team(context(), comm.Get_rank(), comm.Get_size(), _oob(comm))
        making = f"{what} (making the UCC team first)" if what else "making the UCC team"
        engine.wait_until(team.create_test, making, deadline)
        _check_moves_data(engine, team, making, deadline)
        engine.attached[_KEY] = team
        engine.on_close(lambda broken: broken or team.destroy())
    return team


def _check_moves_data(engine: Engine, team: _ucc.Team, what: str, deadline: float | None) -> None:
    """Raise on every rank if the new team cannot move data.

    Where UCX connects none of a team's members, UCC 1.10 logs "failed to connect team ep"
    yet reports the team made and its collectives completed, their buffers untouched: seen
    with a context made per team (UCX then needs a transport that reports peer failures) and
    ``UCX_TLS=sm,self``, which has none. One allreduce of rank + 1 on the team, its outcome
    agreed over MPI, turns that into an error on every rank instead of wrong sums.
    """
    comm = engine.comm
    rank, size = comm.Get_rank(), comm.Get_size()
    v = np.array([rank + 1], dtype=np.int64)
    failed: list[BaseException] = []

    def test(req: _ucc.Collective) -> bool:
        try:
            return req.Test()
        except _ucc.UccError as exc:  # agreed below, so that every rank raises alike
            failed.append(exc)
            return True

    try:
        req = _ucc.post(
            team, "allreduce", dst=v.ctypes.data, dst_count=1, dst_dtype="int64", in_place=True
        )
        engine.wait_until(lambda: test(req), what, deadline)
    except _ucc.UccError as exc:
        failed.append(exc)
    bad = np.array([float(failed or v[0] != size * (size + 1) // 2)])
    engine.wait([comm.Iallreduce(MPI.IN_PLACE, bad, op=MPI.MAX)], what, deadline)
    if bad[0]:
        team.destroy()
        why = f": {failed[0]}" if failed else ""
        raise RuntimeError(
            f"pycomm.ucc: the UCC team of {size} ranks moves no data{why} (UCX connected "
            "none of its members: UCC's log above says why). A UCC context made per team "
            "needs a UCX transport that reports peer failures (tcp; not sm): set "
            "MPIUCC_COLLECTIVES=ucc or auto before init_process_group, which makes the "
            "context over the world, or let UCX_TLS include tcp."
        )


def has_team(engine: Engine) -> bool:
    """Whether the engine's communicator has made its UCC team yet."""
    return _KEY in engine.attached
