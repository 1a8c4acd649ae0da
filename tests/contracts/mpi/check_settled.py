"""The contract on settled keys (issue 26): what a key's many earlier calls let a fast path
skip must not change what the call promises.

1. An invalid argument on one rank (an ``out=`` of the wrong size, on the last rank only) on
   a key called ``WARM`` times before: that rank raises its ValueError/TypeError, every other
   rank ``pycomm.PeerArgumentError``, in the same call; no rank returns data; the next call
   keeps identical bits and the bound. Each codec on its own communicator.
2. Keys that come and go past ``auto_state.MAX_KEYS`` (set to 8 here, on every rank): allreduces of
   ``auto:rms:1e-2`` over many distinct sizes, with ``send``/``recv`` of the same contract
   between them (the sender records its keys in the same table): identical bits and the bound
   on every call, and no hang (``pycomm.set_timeout(60)``; the launcher's timeout above it).
"""

from __future__ import annotations

import sys

import numpy as np
from contract import Bound, Sent, check_reduction, digest, inputs
from mpi4py import MPI

import pycomm
import pycomm.collectives.auto_state

pycomm.collectives.auto_state.MAX_KEYS = 8
COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
WARM = 40
SETTLED = {  # codec: the contract checked after the invalid call (None: identical bits only)
    "none": ("float", None),
    "ebq": ("rel", 1e-3),
    "int8": None,
    "auto:rms:1e-2": ("rms", 1e-2),
    "auto:rel:1e-3": ("rel", 1e-3),
    "auto:abs:1e-3": ("abs", 1e-3),
}
FAILED: list[str] = []


def verdict(what: str, fails: list[str], dig: str) -> bool:
    """Gather every rank's failures and digest; record them on every rank alike; whether
    the call kept the contract."""
    gathered = COMM.allgather((fails, dig))
    found = [f"rank {r}: {f}" for r, (fs, _) in enumerate(gathered) for f in fs]
    if len({d for _, d in gathered}) > 1:
        found.append(f"results differ across ranks: {[d for _, d in gathered]}")
    if found:
        FAILED.append(what)
        if RANK == 0:
            print(f"FAIL {what}\n  " + "\n  ".join(found), flush=True)
    return not found


def reduce_checked(comm, codec: str, params: dict, contract, seed: int, n: int, **kw):
    """One allreduce of every rank's inputs; (failures, digest)."""
    xs = [inputs("normal", seed, r, n, "float32") for r in range(SIZE)]
    try:
        got = pycomm.allreduce(xs[RANK], comm, codec, **params, **kw)
    except Exception as exc:  # noqa: BLE001
        return [f"raised {type(exc).__name__}: {exc}"], "raised"
    sent = Sent(xs)
    bound = None if contract is None else Bound(*contract, sent, "sum", "float32")
    lo, hi = RANK * n // SIZE, (RANK + 1) * n // SIZE
    bad = check_reduction(got, sent, "sum", bound, "float32", lo, hi)
    return ([] if bad is None else [bad]), digest(got)


def invalid_on_one_rank() -> None:
    pycomm.set_timeout(10.0)
    n = 4096
    for codec, contract in SETTLED.items():
        params = {"error_bound": 1e-3, "mode": "rel"} if codec == "ebq" else {}
        comm = COMM.Dup()
        for call in range(WARM):
            fails, dig = reduce_checked(comm, codec, params, contract, call, n)
            if fails:
                verdict(f"{codec}: warm-up call {call + 1}", fails, dig)
                break
        else:
            out = np.empty(n + 1 if RANK == SIZE - 1 else n, np.float32)
            x = inputs("normal", 7, RANK, n, "float32")
            try:
                pycomm.allreduce(x, comm, codec, out=out, **params)
                got = "returned data"
            except (ValueError, TypeError) as exc:
                got = "own" if not isinstance(exc, pycomm.PeerArgumentError) else "peer"
            except Exception as exc:  # noqa: BLE001
                got = f"raised {type(exc).__name__}: {exc}"
            want = "own" if RANK == SIZE - 1 else "peer"
            fails = [] if got == want else [f"{got}, want {want}"]
            verdict(f"{codec}: invalid out= on rank {SIZE - 1} after {WARM} calls", fails, "")
            fails, dig = reduce_checked(comm, codec, params, contract, 99, n)
            verdict(f"{codec}: the call after the invalid one", fails, dig)
        comm.Free()


def keys_come_and_go(rounds: int = 120) -> None:
    pycomm.set_timeout(60.0)
    comm, codec, contract = COMM.Dup(), "auto:rms:1e-2", ("rms", 1e-2)
    sizes = [300, 4000, 20000, 40000]  # keys that stay, while new ones come and go
    for call in range(rounds):
        n = sizes[call % len(sizes)] if call % 10 else 100 + call
        fails, dig = reduce_checked(comm, codec, {}, contract, 1000 + call, n)
        what = f"{codec} allreduce {call + 1} of {n} (MAX_KEYS 8, sends between)"
        if not verdict(what, fails, dig):
            return  # the ranks' tables, or the communicator, are no longer in step
        if call % 3 == 0:  # rank 0 sends a message of a new size to rank 1
            m, fails = 50 + call, []
            try:
                if RANK == 0:
                    pycomm.send(inputs("normal", call, 0, m, "float32"), 1, 3, comm, codec)
                elif RANK == 1:
                    pycomm.recv(np.empty(m, np.float32), 0, 3, comm, codec)
            except Exception as exc:  # noqa: BLE001
                fails = [f"raised {type(exc).__name__}: {exc}"]
            if not verdict(f"send/recv of {m} after call {call + 1}", fails, ""):
                return
    comm.Free()


if __name__ == "__main__":
    if "keys" not in sys.argv:
        invalid_on_one_rank()
    keys_come_and_go()
    if RANK == 0:
        print(f"settled: {SIZE} ranks, {len(FAILED)} failed" + ("" if FAILED else "; passed"))
    sys.exit(1 if FAILED else 0)
