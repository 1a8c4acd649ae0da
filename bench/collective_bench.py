"""OSU-style allreduce bench: plain MPI_Allreduce beside pycomm's compressed variants.

Run under MPI, e.g. ``mpiexec -n 4 python bench/collective_bench.py --sizes 4:256M``. Every
variant reduces the same data (real gradients tiled to size, if bench/data/grads_gpt.f32
exists) in the same run; rank 0 prints latency, bus bandwidth and speed-up over MPI.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pycodecs
from _common import parse_size, sizes_from
from mpi4py import MPI

import pycomm
from pycomm.collectives import reduction as ar
from pycomm.collectives.engine import engine_of
from pycomm.collectives.ring import Ring, host_framer

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
GRADS = Path(__file__).parent / "data" / "grads_gpt.f32"


def variants(args) -> dict[str, dict]:
    table = {"mpi": {}}
    for codec in args.codecs.split(","):
        if codec == "ebq":
            table[f"ebq {args.mode} {args.bound:g}"] = dict(
                codec="ebq", error_bound=args.bound, mode=args.mode
            )
        elif codec != "mpi":
            table[codec] = dict(codec=codec)
    return table


def gradient_data(n: int) -> np.ndarray:
    base = np.fromfile(GRADS, np.float32) if GRADS.exists() else None
    if base is None:
        base = np.random.default_rng(0).standard_t(3, 1 << 20).astype(np.float32) * 1e-3
    reps = -(-n // base.size)
    x = np.tile(base, reps)[:n] if n else base[:0]
    return np.roll(x, RANK * 9973).copy()  # ranks hold different (but alike) gradients


def timed(fn, reps: int) -> float:
    """Median over reps of the slowest rank's time."""
    times = []
    for _ in range(reps):
        COMM.Barrier()
        t0 = time.perf_counter()
        fn()
        dt = COMM.allreduce(time.perf_counter() - t0, op=MPI.MAX)
        times.append(dt)
    return float(np.median(times))


def run(args) -> list[dict]:
    rows = []
    for nbytes in sizes_from(args.sizes):
        n = max(1, nbytes // 4)
        x, y = gradient_data(n), np.empty(n, np.float32)
        reps = max(3, min(args.reps, int(args.reps * (1 << 20) / max(nbytes, 1 << 20))))
        row = {"bytes": n * 4}
        for name, kw in variants(args).items():
            if not kw:
                fn = lambda x=x, y=y: COMM.Allreduce(x, y, op=MPI.SUM)  # noqa: E731
            else:
                fn = lambda x=x, y=y, kw=kw: pycomm.allreduce(x, out=y, op="mean", **kw)  # noqa: E731
            fn()  # warm-up (and the private communicators)
            row[name] = timed(fn, reps)
        for name, kw in variants(args).items():
            if kw:
                frame = pycodecs.compress(x, **kw)
                row[f"{name} ratio"] = x.nbytes / len(frame)
        rows.append(row)
        if RANK == 0 and not args.json:
            print_row(row, args, first=len(rows) == 1)
    return rows


def print_row(row: dict, args, first: bool) -> None:
    names = list(variants(args))
    if first:
        head = f"{'bytes':>10} {'MPI µs':>10} {'MPI GB/s':>9}"
        for name in names[1:]:
            head += f" | {name + ' µs':>20} {'×MPI':>6} {'ratio':>6}"
        print(head)
    base = row["mpi"]
    busbw = 2 * (SIZE - 1) / SIZE * row["bytes"] / base / 1e9
    line = f"{row['bytes']:>10} {base * 1e6:>10.1f} {busbw:>9.2f}"
    for name in names[1:]:
        t = row[name]
        line += f" | {t * 1e6:>20.1f} {base / t:>6.2f} {row[name + ' ratio']:>6.1f}"
    print(line, flush=True)


def phases(args) -> None:
    """Pipelining: the pipelined total against compress + exchange + decode done one by one."""
    n = parse_size(args.phases) // 4
    x, y = gradient_data(n), np.empty(n, np.float32)
    kw = dict(codec="ebq", error_bound=args.bound, mode=args.mode)
    eng = engine_of(COMM)
    e_kw = dict(codec="ebq", error_bound=args.bound * float(np.ptp(x)) / SIZE, mode="abs")
    reps = 3
    frames = []
    ring = Ring(eng, eng.comm, e_kw)
    t_comp = timed(lambda: frames.append(ring.first(x.size, host_framer(x, None, e_kw))), reps)
    got = []
    t_wire = timed(lambda: got.append(ring.exchange(list(frames[-1]), x)), reps)
    t_dec = timed(lambda: ring.decode(got[-1], y), reps)
    t_one = timed(lambda: pycomm.allreduce(x, out=y, segment=n, **kw), reps)
    t_pipe = timed(lambda: pycomm.allreduce(x, out=y, **kw), reps)
    if RANK == 0:
        total = t_comp + t_wire + t_dec
        print(
            f"\npipelining, {n * 4 >> 20} MiB float32 on {SIZE} ranks "
            f"(ebq {args.mode} {args.bound:g}):"
        )
        print(
            f"  compress {t_comp * 1e3:.1f} ms + exchange {t_wire * 1e3:.1f} ms + decode "
            f"{t_dec * 1e3:.1f} ms = {total * 1e3:.1f} ms one after another"
        )
        print(
            f"  allreduce in one segment {t_one * 1e3:.1f} ms; pipelined "
            f"({ar.SEGMENT_COUNT * 4 >> 20} MiB segments) {t_pipe * 1e3:.1f} ms "
            f"= {t_pipe / total:.2f} of the sum"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="4:64M", help="bytes: lo:hi (×4 steps) or a,b,c; K/M/G")
    p.add_argument("--codecs", default="ebq,int8,sign,fp16", help="comma list besides MPI")
    p.add_argument("--bound", type=float, default=1e-4)
    p.add_argument("--mode", default="rel")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--phases", default="", help="also time the pipelining at this size, e.g. 64M")
    p.add_argument("--json", default="", help="write the rows to this file")
    args = p.parse_args()
    if RANK == 0 and not args.json:
        print(
            f"allreduce (mean) of float32 on {SIZE} ranks, "
            f"{MPI.Get_library_version().splitlines()[0]}"
        )
    rows = run(args)
    if args.phases:
        phases(args)
    if RANK == 0 and args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
