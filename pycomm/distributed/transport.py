"""Which library runs a process group's uncompressed collectives: MPI (the default) or UCC.

``MPIUCC_COLLECTIVES`` (``mpi``, ``ucc`` or ``auto``) sets it for every group made after it is
read; ``set_collectives(group, ...)`` for one group. ``ucc`` needs pycomm's UCC layer
(``pycomm.ucc.available()``) and raises where it is missing; ``auto`` takes UCC only where it
was measured faster, and no measurement settles that yet, so for now it resolves to ``mpi``.
Compressed collectives, the argument checks' agreement and point-to-point stay on MPI.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

from pycomm import ucc
from pycomm.distributed import ops

CHOICES = ("mpi", "ucc", "auto")
ENV = "MPIUCC_COLLECTIVES"


def from_env() -> str:
    """The choice ``MPIUCC_COLLECTIVES`` names (``mpi`` when unset)."""
    text = os.environ.get(ENV, "").strip().lower() or "mpi"
    if text not in CHOICES:
        raise ValueError(f"{ENV} must be one of {', '.join(CHOICES)}, not {text!r}")
    return text


def resolve(choice: str) -> str:
    """``mpi`` or ``ucc``: what a group asked to use ``choice`` runs on."""
    if choice not in CHOICES:
        raise ValueError(f"collectives must be one of {', '.join(CHOICES)}, not {choice!r}")
    if choice == "ucc" and not ucc.available():
        raise RuntimeError(
            f"mpiucc: collectives on UCC were asked for ({ENV} or set_collectives), but "
            f"{ucc.unavailable_reason()}; see tools/build_ucc.sh"
        )
    return "ucc" if choice == "ucc" else "mpi"


def init_world(world: Any) -> None:
    """At the default group's creation (every rank): where ``MPIUCC_COLLECTIVES=ucc``, make
    UCC's context over the world, so that UCX connects the ranks of every later team over
    shared memory where it can (a context made by a team alone asks UCX for endpoints that
    report peer failures, which UCX's shared-memory transports cannot: TCP carries them)."""
    if from_env() == "ucc" and ucc.available():
        from pycomm.ucc.team import init_context

        init_context(world)


def ops_for(choice: str, engine: Any) -> tuple[ModuleType, Any]:
    """The ops module a group's collectives call and the first argument they take."""
    if resolve(choice) == "mpi":
        return ops, engine.comm
    from pycomm.distributed import ucc_ops

    return ucc_ops, ucc_ops.UccComm(engine)
