"""MPIUCC_COLLECTIVES=auto (run with it set and the UCC layer): every collective and size class
is timed on MPI and on UCC, then settles on one library, the same on every rank; every call's
results equal an MPI group's, bit for bit, while measuring and after.

``--slow-ucc-on R``: auto's UCC calls on rank R take 0.1 s longer, so the slowest rank's UCC
loses everywhere: every key settles on MPI on every rank.
``--slow-mpi-on R``: the same for MPI: every key settles on UCC.
"""

from __future__ import annotations

import sys
import time

import torch
import torch.distributed as dist
from _dist import assert_equal, init, passed, sample
from mpi4py import MPI

from pycomm.distributed import ucc_ops
from pycomm.distributed.ucc_auto import SAMPLES, WARMUP, Auto
from pycomm.info import info, ucc_layer
from pycomm.info_report import format_info
from pycomm.ucc.team import has_team

RANK, SIZE, _ = init()
WORLD = MPI.COMM_WORLD
AUTO = dist.new_group(backend="mpiucc")
MPI_GROUP = dist.new_group(backend="mpiucc")
MPI_GROUP.set_collectives("mpi")
assert AUTO.collectives == "auto" and dist.group.WORLD.collectives == "auto"
CALLS = 2 * (WARMUP + SAMPLES) + 3  # measured, settled, and a few on the choice


def slow_down(lib: str, rank: int) -> None:
    """On ``rank``, make auto's calls on ``lib`` 0.1 s slower (far above this machine's noise)."""
    if rank != RANK:
        return
    real = Auto._call

    def slow(self, which: str, name: str, args: tuple):
        if which == lib:
            time.sleep(0.1)
        return real(self, which, name, args)

    Auto._call = slow


expect = None
for flag, lib, choice in (("--slow-ucc-on", "ucc", "mpi"), ("--slow-mpi-on", "mpi", "ucc")):
    if flag in sys.argv:
        slow_down(lib, int(sys.argv[sys.argv.index(flag) + 1]))
        expect = choice


def both(call, make, what: str) -> None:
    """call(tensors, group) CALLS times on the auto group and on the MPI group: same bits."""
    for i in range(CALLS):
        want, got = make(i), make(i)
        call(want, MPI_GROUP)
        call(got, AUTO)
        for w, g in zip(want, got, strict=True):
            assert_equal(g, w, f"{what}, call {i}, on {SIZE} ranks")


for n in (2, 1024, 65536):  # float32: 8 B, 4 KiB, 256 KiB
    both(
        lambda ts, g: dist.all_reduce(ts[0], group=g),
        lambda i: [sample((n,), torch.float32, RANK + i)],  # noqa: B023
        f"all_reduce of {n}",
    )
both(
    lambda ts, g: dist.all_reduce(ts[0], op=dist.ReduceOp.AVG, group=g),
    lambda i: [sample((3,), torch.bfloat16, RANK + i)],  # the 8 B class, another dtype
    "all_reduce avg bfloat16",
)
for root in (0, SIZE - 1):
    both(
        lambda ts, g: dist.broadcast(ts[0], root, group=g),  # noqa: B023
        lambda i: [sample((100,), torch.float64, RANK + i)],
        f"broadcast from {root}",
    )
    both(
        lambda ts, g: dist.reduce(ts[0], root, group=g),  # noqa: B023
        lambda i: [sample((100,), torch.int32, RANK + i)],
        f"reduce to {root}",
    )
x = sample((6,), torch.float32, RANK)
both(
    lambda ts, g: dist.all_gather_into_tensor(ts[0], x, group=g),
    lambda i: [torch.empty(6 * SIZE)],
    "all_gather_into_tensor",
)
both(
    lambda ts, g: dist.all_gather(ts, x, group=g),
    lambda i: [torch.empty(6) for _ in range(SIZE)],
    "all_gather",
)
both(
    lambda ts, g: dist.reduce_scatter_tensor(ts[0], ts[1], group=g),
    lambda i: [torch.empty(4), sample((4 * SIZE,), torch.float32, RANK + i)],
    "reduce_scatter_tensor",
)
rows = [r + 1 for r in range(SIZE)]  # uneven: one key for every size
mine = sample((rows[RANK], 2), torch.float32, RANK)
both(
    lambda ts, g: dist.gather(mine, ts if RANK == 0 else None, 0, group=g),
    lambda i: [torch.empty(k, 2) for k in rows] if RANK == 0 else [],
    "uneven gather",
)
chunks = [sample((k, 2), torch.float32, k) for k in rows]
both(
    lambda ts, g: dist.scatter(ts[0], chunks if RANK == 0 else None, 0, group=g),
    lambda i: [torch.empty(rows[RANK], 2)],
    "uneven scatter",
)
send = sample((SIZE * (RANK + 1), 2), torch.float32, RANK)
both(
    lambda ts, g: dist.all_to_all_single(ts[0], send, rows, [RANK + 1] * SIZE, group=g),
    lambda i: [torch.empty(sum(rows), 2)],
    "uneven all_to_all_single",
)
for _ in range(CALLS):
    dist.barrier(group=AUTO)

# async calls, completed by the engine's thread, measured as the others (a new size class)
for i in range(CALLS):
    xs = [sample((5000,), torch.float32, RANK + i + k) for k in range(3)]
    want = [t.clone() for t in xs]
    for t in want:
        dist.all_reduce(t, group=MPI_GROUP)
    for work in [dist.all_reduce(t, group=AUTO, async_op=True) for t in xs]:
        work.wait()
    for t, w in zip(xs, want, strict=True):
        assert_equal(t, w, f"async all_reduce, call {i}")

auto = AUTO._on
assert has_team(AUTO._engine), "auto never ran a collective on UCC"
for key, state in auto.keys.items():
    kept = {lib: len(s) for lib, s in state.samples.items()}
    assert kept == {"mpi": SAMPLES, "ucc": SAMPLES}, (key, kept)  # both libraries were tried
    assert state.choice in ("mpi", "ucc") and state.agreed is not None, key
decisions = auto.decisions()
assert len(decisions) == 13, decisions
everyone = WORLD.allgather(decisions)
assert all(d == decisions for d in everyone), "ranks took different choices"
if expect is not None:
    assert {d["on"] for d in decisions.values()} == {expect}, decisions
assert set(AUTO.on_ucc.values()) <= {"mpi", "ucc"}
if expect == "mpi":  # a blocking all_reduce settled on MPI takes the backend's inline path

    def unexpected(*args):
        raise AssertionError("a settled all_reduce went through auto")

    run, Auto._run = Auto._run, unexpected
    t = torch.full((2,), float(RANK))
    dist.all_reduce(t, group=AUTO)
    Auto._run = run
    assert_equal(t, torch.full((2,), float(sum(range(SIZE)))), "inline all_reduce")

# pycomm.info() in a job lists its groups and what each sends through UCC
UCC_GROUP = dist.new_group(backend="mpiucc")
UCC_GROUP.set_collectives("ucc")
listed = {g["name"]: g for g in ucc_layer()["groups"]}
assert listed[AUTO.group_name]["on_ucc"] == AUTO.on_ucc and AUTO.on_ucc, listed
assert listed[MPI_GROUP.group_name]["on_ucc"] == {}
assert set(listed[UCC_GROUP.group_name]["on_ucc"]) == set(ucc_ops.ON_UCC)
text = format_info(info())
row = next(line for line in text.splitlines() if line.startswith(f"group {AUTO.group_name!r}"))
assert row.split(None, 4)[-1].startswith("auto: allgather "), row
if RANK == 0:
    for what, d in decisions.items():
        print(f"{what}: {d}")
passed("ucc auto")
