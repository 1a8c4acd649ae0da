"""Bad arguments on one rank raise on every rank in the same call, on every path.

For each collective, each path a call can take (a fresh key on the Python path; a settled
uncompressed or auto key on the compiled path) and each bad argument (non-contiguous,
read-only, wrong dtype, wrong size, a foreign object; as x, out, residual or stats), the last
rank passes it and the others pass good ones. Expected: an invalid argument raises TypeError or
ValueError there and PeerArgumentError elsewhere; different settings (a size or dtype the
others do not pass) SettingsMismatchError everywhere; no rank returns, none waits for the
timeout, and the next good call gives identical bits everywhere.
"""

from __future__ import annotations

import sys

import numpy as np
from _check_args import BAD, Bad
from mpi4py import MPI

import pycomm

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
N = 6 * SIZE * 10  # divisible by the ranks (reduce_scatter)
pycomm.set_timeout(20)
#: Calls of a key before the bad one: 0 (the Python path), or enough to settle it.
PATHS = {
    "python": ("ebq:rel:1e-3", 0),
    "compiled": ("none", 3),
    "compiled auto": ("auto:rms:1e-2", 60),
}
FAILED: list[str] = []


def call(what: str, codec: str, args: dict) -> np.ndarray:
    x = args.pop("x")
    if codec.startswith("ebq"):
        codec, args["error_bound"], args["mode"] = "ebq", 1e-3, "rel"
    if what == "allreduce":
        return pycomm.allreduce(x, COMM, codec, **args)
    if what == "reduce_scatter":
        return pycomm.reduce_scatter(x, COMM, codec, **args)
    args.pop("residual", None)
    if what == "allgather":
        return pycomm.allgather(x, COMM, codec, **args)
    args.pop("out", None)
    return pycomm.bcast(x, 0, COMM, codec, **args)


def good(what: str) -> dict:
    return {"x": np.random.default_rng([RANK, 1]).standard_normal(N).astype(np.float32)}


def run(what: str, path: str, bad: Bad) -> None:
    codec, warm = PATHS[path]
    for _ in range(warm):
        call(what, codec, good(what))
    args = good(what)
    if RANK == SIZE - 1:
        args = bad.apply(args, what, N, SIZE)
    try:
        call(what, codec, args)
        got = "returned"
    except pycomm.PeerArgumentError:
        got = "peer"
    except pycomm.SettingsMismatchError:
        got = "mismatch"
    except (TypeError, ValueError):
        got = "raised"
    except Exception as exc:  # noqa: BLE001  (a timeout, a crash: a failure)
        got = f"{type(exc).__name__}: {exc}"
    want = ("raised" if RANK == SIZE - 1 else "peer") if bad.is_invalid(what) else "mismatch"
    seen = COMM.allgather(got)
    if got != want:
        FAILED.append(f"{what} {path} {bad.name}: rank {RANK} {got}, want {want}")
    after = call(what, codec, good(what))
    alike = len({np.asarray(r).tobytes() for r in COMM.allgather(after)}) == 1
    if not alike and what != "reduce_scatter":  # (each rank's block differs)
        FAILED.append(f"{what} {path} {bad.name}: bits differ after it ({seen})")


if __name__ == "__main__":
    cases = 0
    for what in ("allreduce", "reduce_scatter", "allgather", "bcast"):
        for path in PATHS if what == "allreduce" else ("python",):
            for bad in BAD:
                if bad.applies(what):
                    run(what, path, bad)
                    cases += 1
    failed = COMM.allgather(FAILED)
    if RANK == 0:
        for rank_failed in failed:
            for line in rank_failed:
                print("FAIL", line, flush=True)
        total = sum(map(len, failed))
        print(f"arguments: {SIZE} ranks, {cases} cases, {total} failed", flush=True)
        if not total:
            print("arguments: passed")
    sys.exit(1 if any(failed) else 0)
