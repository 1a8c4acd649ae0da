"""Which ranks of a communicator share a node: the layout the node hierarchy works on.

The ranks of a node are those of ``MPI.COMM_TYPE_SHARED`` (one shared-memory domain), or, when
the environment variable ``MPIUCC_NODE`` is set, those whose variable holds the same name (for
emulating several nodes on one machine; set on every rank or on none). ``spans_nodes`` first
asks, within the engine's deadline, whether the ranks span several hosts (processor names, or
``MPIUCC_NODE``) with several ranks on one: only then does ``layout_of`` split the communicator,
by blocking MPI collectives (a split has no deadline), once, and keep the layout on it.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from pycomm.collectives.engine import Engine

NODE_ENV = "MPIUCC_NODE"


@dataclass(frozen=True)
class Layout:
    """This rank's node, the node leaders, and every node's number of ranks."""

    node: MPI.Comm  #: the ranks of this rank's node; node rank 0 is its leader
    leaders: MPI.Comm  #: one rank per node, in node order; COMM_NULL off the leaders
    sizes: tuple[int, ...]  #: ranks of each node, in node order
    #: when every node holds as many ranks: the ranks of this rank's node rank on every node
    #: (each runs the compressed collective on one slice); else COMM_NULL
    peers: MPI.Comm

    @property
    def is_leader(self) -> bool:
        return self.node.Get_rank() == 0

    @property
    def worth_it(self) -> bool:
        """Several nodes, and some node with several ranks: only then does the hierarchy
        move less over the network than a flat collective."""
        return len(self.sizes) >= 2 and max(self.sizes) >= 2

    def free(self) -> None:
        for c in (self.node, self.leaders, self.peers):
            if c != MPI.COMM_NULL:
                c.Free()


_keyvals: dict[str, int] = {}
_lock = threading.Lock()


def _key(what: str = "layout") -> int:
    """The MPI attribute key under which a communicator keeps ``what`` ("layout", whose
    communicators are freed with it, or "spans")."""
    with _lock:
        if what not in _keyvals:
            free = (lambda comm, key, layout: layout.free()) if what == "layout" else None
            _keyvals[what] = MPI.Comm.Create_keyval(delete_fn=free)
    return _keyvals[what]


def spans_nodes(eng: Engine, comm: MPI.Comm) -> bool:
    """Whether comm's ranks lie on several hosts with several ranks on some host (so that the
    hierarchy may pay), found within the engine's deadline, once per communicator."""
    found = comm.Get_attr(_key("spans"))
    if found is None:
        name = os.environ.get(NODE_ENV)
        key = MPI.Get_processor_name() if name is None else name
        digest = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=7).digest(), "little")
        every = np.empty(comm.Get_size(), dtype=np.int64)
        eng.wait([comm.Iallgather(np.array([digest], np.int64), every)], "the node names")
        hosts = np.unique(every, return_counts=True)[1]
        found = bool(len(hosts) >= 2 and hosts.max() >= 2)
        comm.Set_attr(_key("spans"), found)
    return found


def layout_of(eng: Engine, comm: MPI.Comm) -> Layout:
    """comm's layout, found on first use by every rank of comm together (collective)."""
    layout = comm.Get_attr(_key())
    if layout is None:
        layout = _split(eng, comm)
        comm.Set_attr(_key(), layout)
    return layout


def _split(eng: Engine, comm: MPI.Comm) -> Layout:
    rank = comm.Get_rank()
    names = comm.allgather(os.environ.get(NODE_ENV))  # blocking: it runs once per communicator
    if all(n is None for n in names):
        node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank)
    elif any(n is None for n in names):
        raise ValueError(f"{NODE_ENV} is set on some ranks and not on others: {names}")
    else:
        order = sorted(set(names), key=names.index)  # nodes in order of their first rank
        node = comm.Split(order.index(names[rank]), key=rank)
    leader = node.Get_rank() == 0
    leaders = comm.Split(0 if leader else MPI.UNDEFINED, key=rank)
    mine = np.array([leader, node.Get_size()], dtype=np.int64)
    every = np.empty((comm.Get_size(), 2), dtype=np.int64)
    eng.wait([comm.Iallgather(mine, every)], "the node layout")
    sizes = tuple(int(n) for is_leader, n in every if is_leader)
    uniform = len(set(sizes)) == 1 and sizes[0] > 1
    peers = comm.Split(node.Get_rank() if uniform else MPI.UNDEFINED, key=rank)
    return Layout(node, leaders, sizes, peers)
