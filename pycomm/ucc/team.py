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
        engine.attached[_KEY] = team
        engine.on_close(lambda broken: broken or team.destroy())
    return team


def has_team(engine: Engine) -> bool:
    """Whether the engine's communicator has made its UCC team yet."""
    return _KEY in engine.attached
