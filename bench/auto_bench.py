"""codec="auto": what its decision costs per call, and how it does against every fixed choice.

Run under MPI: ``mpiexec -n 2 python bench/auto_bench.py`` (full speed: shared memory), or
``bench/slow_net.sh --links 2 1gbit 2 .venv/bin/python bench/auto_bench.py`` (a 1 Gbit/s link
per rank; ``bench/slow_net.sh 10gbit 4 ...``: one shared link). Rank 0 prints:
1. the decision's cost: ``auto.agreed_choice`` for a 1 MiB float32 mean allreduce on 2 ranks,
   its agreement made locally (every collective makes one anyway; no peer to wait for),
   against the 2-rank 1 MiB allreduce with none;
2. per contract (``--contracts``) and size, the median time (the slowest rank's, each call
   after a barrier) of every fixed choice at that contract (raw, ebq fast and dense, fp16,
   bf16) and of auto after ``--learn`` calls of the key (its trials), on the same data in one
   run; auto over the fastest fixed choice whose bound auto can prove (ebq, raw, a cast where
   proven: "proven"), over the fastest of all ("best") and over raw, and what auto's timed
   calls took.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter

import numpy as np
from _common import synthetic
from mpi4py import MPI

import pycomm
from pycomm.collectives import auto
from pycomm.collectives.bound import contract as bound_of
from pycomm.collectives.bound import local_statistics
from pycomm.collectives.cost import budget, cast_proven
from pycomm.collectives.engine import Engine, engine_of
from pycomm.collectives.link import Link
from pycomm.collectives.plan import SEGMENT_COUNT
from pycomm.collectives.reduction import _flat_plan
from pycomm.collectives.spec import make_spec

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
CONTRACTS = ("auto:rel:1e-3", "auto:rms:1e-3")
FIXED = ("raw", "ebq fast", "ebq dense", "fp16", "bf16")


def fixed(name: str, contract: str) -> tuple[str, dict]:
    """The codec and keywords of a fixed choice at auto's contract (casts keep no bound:
    they are timed all the same, as what a user could pick instead)."""
    _, mode, bound = contract.split(":")
    if name == "raw":
        return "none", {}
    if name.startswith("ebq"):
        return "ebq", dict(error_bound=float(bound), mode=mode, level=name.split()[1])
    return name, {}


def proven_casts(x: np.ndarray, contract: str) -> set[str]:
    """The casts whose worst case auto's proof admits for x at the contract (on every rank's
    data): auto may pick only these, so they are what auto is measured against."""
    spec = make_spec(contract)
    agreed = np.array(local_statistics(x, spec))  # the two maxima auto's agreement carries
    COMM.Allreduce(MPI.IN_PLACE, agreed, op=MPI.MAX)
    bound, top = bound_of(spec, tuple(agreed))
    limit = budget(bound, top, SIZE, True, x.dtype)
    eng, out = engine_of(COMM), set()
    for name in ("fp16", "bf16"):
        algorithm = _flat_plan(eng, COMM, make_spec(name), "auto", x, SEGMENT_COUNT).name
        if cast_proven(name, top, SIZE, x.dtype, algorithm, limit):
            out.add(name)
    return out


def timed(x: np.ndarray, codec: str, repeats: int, **kw) -> list[float]:
    """Each call's time (the slowest rank's) of a mean allreduce of x through codec."""
    out, times = np.empty_like(x), []
    for _ in range(repeats):
        COMM.Barrier()
        t0 = time.perf_counter()
        pycomm.allreduce(x, COMM, codec, out=out, op="mean", **kw)
        times.append(COMM.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    return times


class TwoRanks:
    """A communicator as ``auto.agreed_choice`` sees it: 2 ranks (it asks only the size)."""

    def Get_size(self) -> int:  # noqa: N802 (mpi4py's name)
        return 2


def lone_engine(like: Engine) -> Engine:
    """An engine whose agreement returns this rank's own values without any MPI, with the link
    figures ``like`` measured: what choosing costs this rank's CPU, with no peer to wait for
    (the agreement's allreduce, which every collective makes, left out)."""
    eng = Engine(MPI.COMM_SELF)
    eng.link = Link(2)
    latency, per_byte = like.link.figures()
    eng.link.pin(latency, 1.0 / per_byte)
    eng.agree = lambda what, settings, maxima=(): np.asarray(maxima, dtype=float)  # type: ignore[method-assign]
    return eng


def decision_cost(repeats: int) -> dict:
    """What choosing costs per call of a 1 MiB float32 mean allreduce on 2 ranks: the time of
    ``auto.agreed_choice`` (statistics, figures, model, as the calls come: kept raw decisions
    and a full one every so often) on an engine whose agreement is local, 64 calls a batch,
    median of the batches; and the 2-rank 1 MiB allreduce with none, the call it is weighed
    against."""
    x = synthetic(1 << 18, RANK)
    got = {"world none": statistics.median(timed(x, "none", max(repeats, 20)))}
    eng, comm = lone_engine(engine_of(COMM)), TwoRanks()

    def algorithm_of(spec):
        return _flat_plan(eng, comm, spec, "auto", x, SEGMENT_COUNT).name

    for contract in CONTRACTS:
        spec = make_spec(contract)

        def per_call(spec=spec, calls: int = 64) -> float:
            t0 = time.perf_counter()
            for _ in range(calls):
                auto.agreed_choice(
                    eng, comm, x, spec, "mean", "allreduce", "auto", False, ef=False,
                    algorithm_of=algorithm_of,
                )  # fmt: skip
            return (time.perf_counter() - t0) / calls

        per_call()  # warm: calibration, the first decisions
        got[contract] = statistics.median(per_call() for _ in range(repeats))
    return got


def by_size(contract: str, sizes: list[int], repeats: int, learn: int) -> list[dict]:
    rows = []
    picks: Counter = Counter()
    spy = auto.agreed_choice

    def counting(*args, **kwargs):
        choice = spy(*args, **kwargs)
        picks[choice.name] += 1
        return choice

    def compiled() -> int:  # kept raw calls on the compiled path make no Python decision
        return sum(plan.calls for plan in engine_of(COMM).settled.values())

    auto.agreed_choice = counting
    for nbytes in sizes:
        x = synthetic(nbytes // 4, RANK)
        row = {"bytes": nbytes, "allowed": {"raw", "ebq fast", "ebq dense"}}
        row["allowed"] |= proven_casts(x, contract)
        for name in FIXED:
            codec, kw = fixed(name, contract)
            timed(x, codec, repeats, **kw)  # warm (and an emulated link's burst drained)
            row[name] = statistics.median(timed(x, codec, repeats, **kw))
        timed(x, contract, learn)  # the key's trials
        picks.clear()
        before = compiled()
        row["auto"] = statistics.median(timed(x, contract, repeats))
        picks["raw"] += compiled() - before
        row["chose"] = ", ".join(f"{k} x{v}" for k, v in picks.most_common() if v)
        rows.append(row)
    auto.agreed_choice = spy
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--learn", type=int, default=20, help="auto calls of a key before timing")
    p.add_argument("--sizes", default="65536,1048576,16777216", help="bytes, comma-separated")
    p.add_argument("--contracts", default=",".join(CONTRACTS))
    args = p.parse_args()
    contracts = args.contracts.split(",")
    cost = decision_cost(max(args.repeats, 50))
    sizes = [int(s) for s in args.sizes.split(",")]
    tables = {c: by_size(c, sizes, args.repeats, args.learn) for c in contracts}
    if RANK:
        return
    print(f"codec=auto on {SIZE} ranks (float32 mean)")
    world = cost["world none"]
    print(f"decision, 1 MiB on 2 ranks; the {SIZE}-rank 1 MiB call with none {world * 1e6:.0f} us")
    for contract in CONTRACTS:
        print(f"  {contract}: {cost[contract] * 1e6:.1f} us a call, {cost[contract] / world:.2%}")
    link = engine_of(COMM).link.describe()
    print(
        f"link measured: {link['latency_us']:.1f} us per round, "
        f"{link['bandwidth_gbit_s']:.2f} Gbit/s"
    )
    names = [*FIXED, "auto"]
    for contract, rows in tables.items():
        print(f"\n{contract}, after {args.learn} calls of each key")
        head = " ".join(f"{n + ' ms':>12}" for n in names)
        print(f"{'size':>9} {head}  /proven   /best     /raw  auto chose")
        for r in rows:
            proven = min(r[n] for n in r["allowed"])
            best = min(r[n] for n in FIXED)
            times = " ".join(f"{r[n] * 1e3:>12.2f}" for n in names)
            ratios = " ".join(f"{r['auto'] / t:>8.2f}" for t in (proven, best, r["raw"]))
            print(f"{r['bytes'] >> 10:>7}Ki {times}  {ratios}  {r['chose']}")


if __name__ == "__main__":
    main()
