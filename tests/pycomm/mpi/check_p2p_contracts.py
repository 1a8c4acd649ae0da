"""pycomm's point-to-point contracts (issue 26): run on 2 ranks.

1. a request whose handle is dropped still sends or receives what it was given: its frame and
   scratch are the engine's until MPI is done with them, and freeing the communicator does not
   free what MPI still reads (a receive not yet matched then fails: nothing can match it);
2. a receive whose frame does not match (size, dtype, codec) leaves ``out`` as it was.
"""

from __future__ import annotations

import gc
import time

import numpy as np
from _check import COMM, RANK, SIZE

import pycomm
from pycomm.collectives.engine import engine_of

assert SIZE == 2, "run on 2 ranks"
pycomm.set_timeout(30.0)
PEER = 1 - RANK
N = 1 << 20  # 4 MiB of float32: sent by rendezvous, after the sender has moved on


def churn() -> None:
    """Free what was dropped, then reuse the memory: a buffer MPI still reads gets overwritten."""
    gc.collect()
    junk = [np.full(2 * N, -7.0, np.float32) for _ in range(4)]
    del junk


def check_dropped_requests_keep_their_buffers() -> None:
    c = COMM.Dup()
    if RANK == 0:
        for i in range(3):
            pycomm.isend(np.full(N, i + 1, np.float32), PEER, tag=i, comm=c)
            churn()
        pycomm.isend(np.full(N, 9, np.float32), PEER, tag=3, codec="fp16", comm=c)
        got = np.zeros(N, np.float32)
        pycomm.irecv(got, PEER, tag=4, comm=c)
        never = pycomm.irecv(np.zeros(4, np.float32), PEER, tag=5, comm=c)
        churn()
        COMM.Barrier()
        inbox = engine_of(c).inbox
        deadline = time.monotonic() + 20
        while inbox.pending() > 1:  # the engine's thread matches tag 4 (rank 1 has sent it)
            assert time.monotonic() < deadline, "a dropped receive was never matched"
            time.sleep(0.001)
        c.Free()  # with sends and a receive in flight, and a receive nobody answers
        churn()
        COMM.Barrier()
        while not np.all(got == 5):
            assert time.monotonic() < deadline, f"a dropped receive never landed: {got[:4]}"
            time.sleep(0.01)
        try:
            never.wait()
        except RuntimeError as exc:
            assert "communicator was freed first" in str(exc), exc
        else:
            raise AssertionError("a receive unmatched when its communicator was freed returned")
    else:
        COMM.Barrier()
        reply = pycomm.isend(np.full(N, 5, np.float32), PEER, tag=4, comm=c)
        for i in range(3):
            got = pycomm.recv(np.zeros(N, np.float32), PEER, tag=i, comm=c)
            assert np.all(got == i + 1), f"send {i}: {got[:4]} ... {got[-4:]}"
        got = pycomm.recv(np.zeros(N, np.float32), PEER, tag=3, codec="fp16", comm=c)
        assert np.all(got == 9), got[:4]
        COMM.Barrier()
        reply.wait()
        c.Free()


def check_mismatched_receive_leaves_out() -> None:
    sends = [
        (np.arange(5, dtype=np.float32), {}),
        (np.arange(10, dtype=np.float64), {}),
        (np.arange(10, dtype=np.float32), {"codec": "int8"}),
        (np.arange(N, dtype=np.float32), {"codec": "ebq", "error_bound": 1e-3}),
    ]
    for blocking in (True, False):
        for tag, (x, kw) in enumerate(sends, 10):
            if RANK == 0:
                pycomm.send(x, PEER, tag, **kw)
                continue
            out = np.full(N if x.size == N else 10, -1.0, np.float32)
            want = out.copy()
            try:
                if blocking:
                    pycomm.recv(out, PEER, tag)
                else:
                    pycomm.irecv(out, PEER, tag).wait()
            except pycomm.SettingsMismatchError:
                pass
            else:
                raise AssertionError(f"a frame of {x.size} {x.dtype} {kw} was taken")
            assert np.array_equal(out, want), f"{x.size} {x.dtype} {kw}: out was overwritten"


for check in (check_dropped_requests_keep_their_buffers, check_mismatched_receive_leaves_out):
    check()
    COMM.Barrier()
if RANK == 0:
    print("p2p contracts: passed", flush=True)
