"""torch.distributed backends side by side: mpiucc, gloo and raw mpi4py in one run.

Run under MPI, e.g. ``mpiexec -n 4 python bench/backend_bench.py``. Measures
init_process_group (mpiucc over mpi://, gloo over TCP on 127.0.0.1 and over mpi://),
new_group, the latency of small all_reduce calls and the bandwidth of large ones. Times are
the slowest rank's; each figure is the best of a few repeats (the medians of init times).
Rank 0 prints the tables (and writes JSON with --json).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
from _common import sizes_from
from mpi4py import MPI

import pycomm.distributed  # noqa: F401  (registers mpiucc and mpi://)
from pycomm.distributed.backend import ProcessGroupMpiucc
from pycomm.distributed.work import DoneWork

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()


def slowest(seconds: float) -> float:
    return WORLD.allreduce(seconds, op=MPI.MAX)


def timed_once(fn) -> float:
    WORLD.Barrier()
    t0 = time.perf_counter()
    fn()
    return slowest(time.perf_counter() - t0)


def calls_for(fn, budget_s: float) -> int:
    """How many calls of fn fill about budget_s (the same number on every rank)."""
    for _ in range(3):
        fn()
    probe = timed_once(lambda: [fn() for _ in range(5)]) / 5
    return WORLD.bcast(max(3, min(20000, int(budget_s / max(probe, 1e-7)))), root=0)


def per_call(fns: dict, budget_s: float, repeats: int = 5) -> dict[str, float]:
    """Seconds per call of each fn: best of `repeats`, the fns interleaved, slowest rank."""
    counts = {k: calls_for(fn, budget_s) for k, fn in fns.items()}
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for k, fn in fns.items():
            n = counts[k]
            best[k] = min(best[k], timed_once(lambda: [fn() for _ in range(n)]) / n)  # noqa: B023
    return best


def free_port() -> int:
    if RANK == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    else:
        port = None
    return WORLD.bcast(port, root=0)


def init_times(backend: str, how: str, reps: int) -> list[float]:
    """init_process_group seconds for each of reps runs (after one unmeasured warm-up)."""
    out = []
    for i in range(reps + 1):
        if how == "tcp":
            url, kw = f"tcp://127.0.0.1:{free_port()}", {"rank": RANK, "world_size": SIZE}
        else:
            url, kw = "mpi://", {}
        dt = timed_once(lambda: dist.init_process_group(backend, init_method=url, **kw))  # noqa: B023
        if i:
            out.append(dt)
        dist.barrier()
        dist.destroy_process_group()
    return out


def new_group_time(backend: str, ranks: list[int], reps: int) -> float:
    """Seconds per new_group call, over `reps` calls in a row (after one warm-up call)."""
    dist.new_group(ranks, backend=backend)
    return timed_once(lambda: [dist.new_group(ranks, backend=backend) for _ in range(reps)]) / reps


def comm_create_time(ranks: list[int], reps: int) -> float:
    """Seconds per MPI_Comm_create_group (what mpiucc's new_group calls)."""
    group = WORLD.Get_group().Incl(ranks)

    def make() -> None:
        if RANK in ranks:
            WORLD.Create_group(group, 7).Free()

    make()
    dt = timed_once(lambda: [make() for _ in range(reps)]) / reps
    group.Free()
    return dt


def collective_times(sizes: list[int], budget_s: float, raw: bool) -> dict[int, dict[str, float]]:
    """Seconds per blocking all_reduce of float32 tensors through the default group.

    With ``raw`` (the mpiucc run), also: mpi4py's own Allreduce, the group with its argument
    check on (as under TORCH_DISTRIBUTED_DEBUG=DETAIL), and torch's floor: dist.all_reduce on a
    Python group whose allreduce does nothing (what any backend registered from Python pays).
    """
    out: dict[int, dict[str, float]] = {}
    comm = WORLD.Dup() if raw else None
    for nbytes in sizes:
        t = torch.ones(max(1, nbytes // 4))
        fns = {"torch": lambda t=t: dist.all_reduce(t)}
        if raw:
            a = t.numpy()
            fns["mpi4py"] = lambda a=a: comm.Allreduce(MPI.IN_PLACE, a, MPI.SUM)
            fns["checked"] = lambda t=t: _checked_all_reduce(t)
            fns["floor"] = lambda t=t: _floor_all_reduce(t)
        out[nbytes] = per_call(fns, budget_s)
    if comm is not None:
        comm.Free()
    return out


def _checked_all_reduce(t: torch.Tensor) -> None:
    """mpiucc's all_reduce with its argument check (TORCH_DISTRIBUTED_DEBUG=DETAIL)."""
    pg = dist.group.WORLD
    pg._checked = True
    try:
        dist.all_reduce(t)
    finally:
        pg._checked = False


_DONE = DoneWork()


def _floor_all_reduce(t: torch.Tensor) -> None:
    """dist.all_reduce through a Python group that does no communication at all."""
    real = ProcessGroupMpiucc.allreduce
    ProcessGroupMpiucc.allreduce = lambda self, tensors, opts=None: _DONE
    try:
        dist.all_reduce(t)
    finally:
        ProcessGroupMpiucc.allreduce = real


def memcpy_gbps(nbytes: int) -> float:
    src = np.ones(nbytes, np.uint8)
    dst = np.empty_like(src)
    t = min(timed_once(lambda: np.copyto(dst, src)) for _ in range(5))
    return nbytes / t / 1e9


def _name(ranks: list[int]) -> str:
    return "all" if len(ranks) == SIZE else str(ranks)


def run(args: argparse.Namespace) -> dict:
    small, large = sizes_from(args.small), sizes_from(args.large)
    subsets = [list(range(SIZE))] + ([[0, 1]] if SIZE > 2 else [])
    res: dict = {"ranks": SIZE, "mpi": MPI.Get_library_version().splitlines()[0].strip()}
    res["init_ms"] = {
        "mpiucc mpi://": init_times("mpiucc", "mpi", args.reps),
        "gloo tcp://127.0.0.1": init_times("gloo", "tcp", args.reps),
        "gloo mpi://": init_times("gloo", "mpi", args.reps),
    }
    res["new_group_ms"] = {}
    res["latency_us"], res["bandwidth"] = {}, {}
    for backend, how in (("mpiucc", "mpi"), ("gloo", "tcp")):
        url = "mpi://" if how == "mpi" else f"tcp://127.0.0.1:{free_port()}"
        kw = {} if how == "mpi" else {"rank": RANK, "world_size": SIZE}
        dist.init_process_group(backend, init_method=url, timeout=timedelta(minutes=5), **kw)
        for ranks in subsets:
            key = f"{backend} new_group({_name(ranks)})"
            res["new_group_ms"][key] = new_group_time(backend, ranks, args.reps * 4)
        raw = backend == "mpiucc"
        res["latency_us"][backend] = collective_times(small, args.budget, raw)
        res["bandwidth"][backend] = collective_times(large, args.budget * 4, raw)
        dist.barrier()
        dist.destroy_process_group()
    for ranks in subsets:
        key = f"MPI_Comm_create_group({_name(ranks)})"
        res["new_group_ms"][key] = comm_create_time(ranks, args.reps * 4)
    res["memcpy_GBps"] = memcpy_gbps(max(large))
    return res


def report(res: dict) -> None:
    print(f"# backend bench: {res['ranks']} ranks, {res['mpi']}")
    print("\ninit_process_group               median ms   vs gloo tcp")
    inits = {k: statistics.median(v) * 1e3 for k, v in res["init_ms"].items()}
    for name, v in inits.items():
        print(f"  {name:30s} {v:9.2f}   {v / inits['gloo tcp://127.0.0.1']:8.3f}x")
    print("\nnew_group                        ms/call   vs gloo")
    groups = {k: v * 1e3 for k, v in res["new_group_ms"].items()}
    for name, v in groups.items():
        ranks = name[name.index("(") :]
        print(f"  {name:30s} {v:9.3f}   {v / groups['gloo new_group' + ranks]:8.3f}x")
    lat = res["latency_us"]
    print("\nall_reduce float32, blocking: µs per call (slowest rank)")
    print("  mpiucc: the default (no argument check); checked: TORCH_DISTRIBUTED_DEBUG=DETAIL;")
    print("  floor: dist.all_reduce on a Python group that does nothing (torch's own share)")
    head = (
        "bytes",
        "mpi4py",
        "mpiucc",
        "checked",
        "floor",
        "gloo",
        "mpiucc/",
        "checked/",
        "floor/",
    )
    print("  {:>8s} {:>8s} {:>8s} {:>8s} {:>8s} {:>8s} {:>8s} {:>9s} {:>7s}".format(*head))
    for n in lat["mpiucc"]:
        raw, ours, chk, floor = (
            lat["mpiucc"][n][k] for k in ("mpi4py", "torch", "checked", "floor")
        )
        gl = lat["gloo"][n]["torch"]
        row = (n, *(v * 1e6 for v in (raw, ours, chk, floor, gl)), ours / raw, chk / raw)
        print(
            "  {:8d} {:8.1f} {:8.1f} {:8.1f} {:8.1f} {:8.1f} {:7.2f}x {:8.2f}x".format(*row), end=""
        )
        print(f" {floor / raw:6.2f}x")
    bw = res["bandwidth"]
    print(f"\nall_reduce float32: GB/s (bytes/time; memcpy {res['memcpy_GBps']:.1f} GB/s)")
    print("  {:>10s} {:>8s} {:>8s} {:>8s}".format("bytes", "mpi4py", "mpiucc", "gloo"))
    for n in bw["mpiucc"]:
        raw, ours, gl = bw["mpiucc"][n]["mpi4py"], bw["mpiucc"][n]["torch"], bw["gloo"][n]["torch"]
        print(f"  {n:10d} {n / raw / 1e9:8.2f} {n / ours / 1e9:8.2f} {n / gl / 1e9:8.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5, help="init / new_group repetitions")
    p.add_argument("--small", default="8:64K", help="latency sizes in bytes (lo:hi, x4 steps)")
    p.add_argument("--large", default="1M,16M,64M", help="bandwidth sizes in bytes")
    p.add_argument("--budget", type=float, default=0.05, help="seconds per latency figure")
    p.add_argument("--json", help="also write the results here (rank 0)")
    args = p.parse_args()
    torch.set_num_threads(1)
    res = run(args)
    if RANK == 0:
        report(res)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
