"""Which library runs a process group's uncompressed collectives: MPI (the default) or UCC.

``MPIUCC_COLLECTIVES`` (``mpi``, ``ucc`` or ``auto``) sets it for every group made after it is
read; ``set_collectives(group, ...)`` for one group. ``ucc`` needs pycomm's UCC layer
(``pycomm.ucc.available()``) and raises where it is missing; ``auto`` takes UCC only where it
measured faster, per collective and size class (``ucc_auto``), and is ``mpi`` without the layer.
Compressed collectives, the argument checks' agreement and point-to-point stay on MPI.
"""

from __future__ import annotations

import os
import weakref
from types import ModuleType
from typing import Any

from pycomm import ucc
from pycomm.distributed import ops

CHOICES = ("mpi", "ucc", "auto")
ENV = "MPIUCC_COLLECTIVES"
_groups: weakref.WeakSet = weakref.WeakSet()  # the live mpiucc groups, for pycomm.info


def track(group: Any) -> None:
    """Count ``group`` among the live groups that ``groups()`` lists."""
    _groups.add(group)


def groups() -> list[dict[str, Any]]:
    """Each live mpiucc group of this process: ``name``, ``size``, ``collectives`` (mpi, ucc
    or auto) and ``on_ucc`` (which collectives it sends through UCC, ``on_ucc`` of the group)."""
    return [
        {"name": g.group_name, "size": g.size(), "collectives": g.collectives, "on_ucc": g.on_ucc}
        for g in sorted(_groups, key=lambda g: g.group_name)
    ]


def from_env() -> str:
    """The choice ``MPIUCC_COLLECTIVES`` names (``mpi`` when unset)."""
    text = os.environ.get(ENV, "").strip().lower() or "mpi"
    if text not in CHOICES:
        raise ValueError(f"{ENV} must be one of {', '.join(CHOICES)}, not {text!r}")
    return text


def resolve(choice: str) -> str:
    """``mpi``, ``ucc`` or ``auto``: what a group asked to use ``choice`` runs on (``auto``
    is ``mpi`` where the UCC layer is missing)."""
    if choice not in CHOICES:
        raise ValueError(f"collectives must be one of {', '.join(CHOICES)}, not {choice!r}")
    if choice == "ucc" and not ucc.available():
        raise RuntimeError(
            f"mpiucc: collectives on UCC were asked for ({ENV} or set_collectives), but "
            f"{ucc.unavailable_reason()}; see tools/build_ucc.sh"
        )
    return "mpi" if choice == "auto" and not ucc.available() else choice


def init_world(world: Any) -> None:
    """At the default group's creation (every rank): where ``MPIUCC_COLLECTIVES`` is ``ucc``
    or ``auto``, make UCC's context over the world, so that UCX connects the ranks of every
    later team over shared memory where it can (a context made by a team alone asks UCX for
    endpoints that report peer failures, which UCX's shared-memory transports cannot: TCP
    carries them)."""
    if from_env() in ("ucc", "auto") and ucc.available():
        from pycomm.ucc.team import init_context

        init_context(world)


def ops_for(choice: str, engine: Any) -> tuple[ModuleType | type, Any]:
    """The ops module a group's collectives call and the first argument they take (for
    auto: the ``ucc_auto.Auto`` class, whose methods stand for the functions, and the group's
    instance)."""
    resolved = resolve(choice)
    if resolved == "mpi":
        return ops, engine.comm
    if resolved == "auto":
        from pycomm.distributed.ucc_auto import Auto

        return Auto, Auto(engine)
    from pycomm.distributed import ucc_ops

    return ucc_ops, ucc_ops.UccComm(engine)
