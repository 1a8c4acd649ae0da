"""Fault injection: a rank that never joins, a rank that dies mid-collective, mismatches.

Usage: check_faults.py never|dies|freezes|mismatch TIMEOUT. Every surviving rank prints one line
``rank R: <case>: <ErrorType> after S s`` per fault it saw; the pytest driver checks them.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np
from _check import COMM, RANK, SIZE

import pycomm

SCENARIO, TIMEOUT = sys.argv[1], float(sys.argv[2])
VICTIM = SIZE - 1
BIG = 1 << 22  # 16 MiB of float32: rings, pipelined segments, rendezvous-size messages
pycomm.set_timeout(TIMEOUT)


def report(case: str, call) -> BaseException:
    """Run call, which must raise; print what it raised and how long it took."""
    start = time.monotonic()
    try:
        result = call()
    except Exception as exc:  # noqa: BLE001 (any clear error is what the test wants)
        took = time.monotonic() - start
        print(f"rank {RANK}: {case}: {type(exc).__name__} after {took:.2f} s", flush=True)
        return exc
    print(f"rank {RANK}: {case}: RETURNED {np.asarray(result).ravel()[:4]}", flush=True)
    raise AssertionError(f"{case} returned although a rank was missing")


def never_arrives() -> None:
    """The victim joins none of these; each gets a communicator of its own (they break)."""
    x = np.random.default_rng(RANK).standard_normal(BIG).astype(np.float32)
    cases = {
        "allreduce none": lambda c: pycomm.allreduce(x[:100], c),
        "allreduce settled": lambda c: pycomm.allreduce(np.zeros(1), c),  # the compiled path
        "allreduce ebq": lambda c: pycomm.allreduce(x, c, "ebq", error_bound=1e-3),
        "allreduce int8": lambda c: pycomm.allreduce(x, c, "int8", algorithm="allgather"),
        "iallreduce sign": lambda c: pycomm.iallreduce(x, c, "sign").wait(),
        "reduce_scatter ebq": lambda c: pycomm.reduce_scatter(
            x[: BIG // SIZE * SIZE], c, "ebq", error_bound=1e-3
        ),
        "allgather fp16": lambda c: pycomm.allgather(x[:1000], c, "fp16"),
        "bcast ebq": lambda c: pycomm.bcast(x, 0, c, "ebq", error_bound=1e-3),
        "recv": lambda c: pycomm.recv(np.empty(10, np.float32), VICTIM, 3, c),
        "send": lambda c: pycomm.send(x, VICTIM, 3, c),  # large: needs the receiver
        "irecv": lambda c: pycomm.irecv(np.empty(10, np.float32), VICTIM, 4, c).wait(),
    }
    comms = {case: COMM.Dup() for case in cases}
    fresh = COMM.Dup()  # pycomm has not used it yet: its first call duplicates it
    for c in comms.values():  # pycomm's channels exist: the faults hit the operations
        pycomm.allreduce(np.zeros(1), c)
    if RANK != VICTIM:
        exc = report("first use", lambda: pycomm.allreduce(x[:10], fresh))
        assert isinstance(exc, pycomm.CommTimeout), repr(exc)
        for case, call in cases.items():
            exc = report(case, lambda: call(comms[case]))  # noqa: B023
            assert isinstance(exc, pycomm.CommTimeout), repr(exc)
            # The communicator is broken now, and says so at once.
            report(case + " again", lambda: call(comms[case]))  # noqa: B023
    COMM.Barrier()  # the world is fine: the victim joins here
    if RANK == 0:
        print("never: passed", flush=True)


def dies_or_freezes(how: signal.Signals) -> None:
    """The victim sends itself ``how`` while a large compressed allreduce is on the wire.

    SIGKILL: the launcher sees the death and ends the job. SIGSTOP (a frozen node): only the
    survivors' timeouts can tell; they raise, then rank 0 kills the frozen victim.
    """
    x = np.random.default_rng(RANK).standard_normal(BIG).astype(np.float32)
    pids = COMM.allgather(os.getpid())
    pycomm.allreduce(x[:10], codec="none")  # everyone is in step
    if RANK == VICTIM:
        pycomm.iallreduce(x, codec="ebq", error_bound=1e-4)
        time.sleep(0.05)
        os.kill(os.getpid(), how)
    report("allreduce ebq", lambda: pycomm.allreduce(x, codec="ebq", error_bound=1e-4))
    if RANK == 0:
        time.sleep(2.0)  # let the other survivors report first
        os.kill(pids[VICTIM], signal.SIGKILL)
    # A frozen victim: the survivors saw CommTimeout and end with an error, as a job would.
    # A dead one: exit 0, so that only the launcher, seeing the death, can fail the job.
    os._exit(3 if how == signal.SIGSTOP else 0)


def mismatch() -> None:
    """Ranks disagree on settings or sizes: every rank raises, none hangs, none gets data."""
    x = np.ones(5000 + (RANK == 0), np.float32)
    y = np.ones(5000, np.float32)
    cases = {
        "allreduce size": lambda: pycomm.allreduce(x, codec="ebq", error_bound=1e-3),
        "allreduce dtype": lambda: pycomm.allreduce(y.astype(np.float64) if RANK else y),
        "allreduce codec": lambda: pycomm.allreduce(y, codec="int8" if RANK else "fp16"),
        "allreduce bound": lambda: pycomm.allreduce(y, codec="ebq", error_bound=1e-3 * (1 + RANK)),
        "allreduce op": lambda: pycomm.allreduce(y, op="mean" if RANK else "sum"),
        "reduce_scatter size": lambda: pycomm.reduce_scatter(np.ones(SIZE * (2 + (RANK == 0)))),
        "allgather size": lambda: pycomm.allgather(x, codec="fp16"),
        "bcast root": lambda: pycomm.bcast(y, root=RANK % 2),
        "bcast size": lambda: pycomm.bcast(x, codec="ebq", error_bound=1e-3),
    }
    for case, call in cases.items():
        exc = report(case, call)
        assert isinstance(exc, pycomm.SettingsMismatchError), repr(exc)
    # Point to point: the receiver checks the frame against what it expects.
    peer = RANK ^ 1
    if peer < SIZE:
        if RANK % 2 == 0:
            pycomm.send(y, peer, 5, codec="int8")
            pycomm.send(y, peer, 6)
        else:
            exc = report("recv codec", lambda: pycomm.recv(np.empty_like(y), peer, 5))
            assert isinstance(exc, pycomm.SettingsMismatchError), repr(exc)
            exc = report("recv size", lambda: pycomm.recv(np.empty(10, np.float32), peer, 6))
            assert isinstance(exc, pycomm.SettingsMismatchError), repr(exc)
    # After a mismatch the collectives still work (every rank raised at the same point).
    z = pycomm.allreduce(np.full(10, RANK, np.float32), codec="ebq", error_bound=1e-3)
    assert np.allclose(z, SIZE * (SIZE - 1) / 2, atol=1e-3)
    if RANK == 0:
        print("mismatch: passed", flush=True)


with pycomm.abort_on_error():  # a failed check ends the job at once
    if SCENARIO == "never":
        never_arrives()
    elif SCENARIO == "mismatch":
        mismatch()
    else:
        dies_or_freezes({"dies": signal.SIGKILL, "freezes": signal.SIGSTOP}[SCENARIO])
