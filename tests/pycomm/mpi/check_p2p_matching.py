"""Posted receives under a real MPI (issue 32): run on 2 ranks, under MPICH and Open MPI.

1. irecv, isend, wait for the send, on both ranks at once: the receive progresses on its own
   (a large send completes only once its receive has taken it), also while the engine's
   thread waits in a collective;
2. wildcard receives posted before their messages arrive take them in MPI's order, and a
   blocking recv posted after them does not overtake them;
3. a message longer than the receive can take (rendezvous-sized) fails that receive with a
   clear error on that rank, out keeps its values, and the next message is received.
"""

from __future__ import annotations

import numpy as np
from _check import COMM, RANK, SIZE
from mpi4py import MPI

import pycomm

assert SIZE == 2, "run on 2 ranks"
pycomm.set_timeout(30.0)
PEER = 1 - RANK
N = 1 << 20  # 4 MiB of float32: past every eager limit


def check_receive_progresses_while_the_caller_waits_on_its_send() -> None:
    got = np.zeros(N, np.float32)
    r = pycomm.irecv(got, PEER, tag=1)
    COMM.Barrier()  # both receives are posted before either message comes
    s = pycomm.isend(np.full(N, RANK + 1, np.float32), PEER, tag=1)
    s.wait()
    r.wait()
    assert np.all(got == PEER + 1), got[:4]


def check_receive_progresses_while_a_collective_waits() -> None:
    """Rank 1's send completes only once rank 0's receive has matched it, and rank 0's engine
    thread is busy in the allreduce that rank 1 joins after the send."""
    x = np.ones(4, np.float32)
    pycomm.allreduce(x)  # the engine's duplicate communicator, made now
    if RANK == 1:
        COMM.Barrier()
        pycomm.send(np.full(N, 7, np.float32), PEER, tag=2)
        assert pycomm.allreduce(x)[0] == 2.0
        return
    got = np.zeros(N, np.float32)
    r = pycomm.irecv(got, PEER, tag=2)
    a = pycomm.iallreduce(x)  # the engine's thread waits in it for rank 1
    COMM.Barrier()
    assert a.wait()[0] == 2.0
    r.wait()
    assert np.all(got == 7), got[:4]


def check_wildcards_keep_mpi_s_order() -> None:
    if RANK == 0:
        COMM.Barrier()  # rank 1's receives are posted
        for tag, value in ((7, 1.0), (5, 2.0), (5, 3.0), (8, 4.0), (9, 5.0)):
            pycomm.send(np.full(3, value, np.float32), PEER, tag)
        return
    outs = [np.zeros(3, np.float32) for _ in range(4)]
    patterns = [(MPI.ANY_SOURCE, 5), (PEER, MPI.ANY_TAG), (MPI.ANY_SOURCE, MPI.ANY_TAG), (PEER, 8)]
    reqs = [pycomm.irecv(o, s, t) for o, (s, t) in zip(outs, patterns, strict=True)]
    COMM.Barrier()
    last = pycomm.recv(np.zeros(3, np.float32), MPI.ANY_SOURCE, MPI.ANY_TAG)
    for r in reversed(reqs):
        r.wait()
    # MPI: 7 -> (peer, any); 5 -> (any, 5); the second 5 -> (any, any); 8 -> (peer, 8); the
    # blocking recv, posted last, gets 9.
    got = [float(o[0]) for o in outs]
    assert got == [2.0, 1.0, 3.0, 4.0] and last[0] == 5.0, (got, last)


def check_oversized_message_fails_its_receive_only() -> None:
    if RANK == 0:
        pycomm.send(np.ones(N, np.float32), PEER, tag=3)
        pycomm.send(np.full(4, 6.0, np.float32), PEER, tag=3)
        return
    out = np.full(4, -1.0, np.float32)
    try:
        pycomm.irecv(out, PEER, tag=3).wait()
    except pycomm.SettingsMismatchError as exc:
        assert "more than any raw frame of 4 float32" in str(exc), exc
    else:
        raise AssertionError("a message of 4 MiB was taken into 16 bytes")
    assert np.all(out == -1.0), out
    assert np.all(pycomm.recv(out, PEER, tag=3) == 6.0), out


for check in (
    check_receive_progresses_while_the_caller_waits_on_its_send,
    check_receive_progresses_while_a_collective_waits,
    check_wildcards_keep_mpi_s_order,
    check_oversized_message_fails_its_receive_only,
):
    check()
    COMM.Barrier()
if RANK == 0:
    print("p2p matching: passed", flush=True)
