"""MPIUCC_COLLECTIVES=auto (run with it set and the UCC layer): every collective and size class
is timed on MPI and on UCC, then settles on one library, the same on every rank; every call's
results equal an MPI group's, bit for bit, while measuring and after. A blocking all_reduce
is timed on MPI where it runs once settled there: the backend's inline path, not auto's
general one. Without a ``--slow-*`` flag, a key settled on MPI is then overturned when UCC
becomes the faster: at the end of the next round, on every rank at the same call.

``--slow-ucc-on R``: auto's UCC calls on rank R record 0.1 s more, so the slowest rank's UCC
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

from pycomm.distributed import ucc_auto, ucc_ops
from pycomm.distributed.ucc_auto import LIBRARY, ROUND, Auto, Key
from pycomm.info import info, ucc_layer
from pycomm.info_report import format_info
from pycomm.ucc.team import has_team

RANK, SIZE, _ = init()
WORLD = MPI.COMM_WORLD
AUTO = dist.new_group(backend="mpiucc")
MPI_GROUP = dist.new_group(backend="mpiucc")
MPI_GROUP.set_collectives("mpi")
assert AUTO.collectives == "auto" and dist.group.WORLD.collectives == "auto"
CALLS = ROUND + 3  # measured, settled, and a few on the choice
KEEP, SAMPLES = LIBRARY.keep, LIBRARY.warmup + LIBRARY.samples  # samples: warm-ups counted
SLOW: dict[str, str | None] = {"lib": None}  # the library whose times this rank inflates
LATE: dict[str, str | None] = {"lib": None}  # the library whose timed calls this rank joins late
_take = Key.take
took: list[tuple[Key, str]] = []  # each call's key and library, whichever path it took


def take(self: Key, lib: str):
    """Key.take, with 0.1 s added to the recorded times of SLOW's library (far above this
    machine's noise): times injected where they are recorded, whichever path the call took.
    A timed call of LATE's library starts 0.3 s late here, before the others wait for it."""
    took.append((self, lib))
    record = _take(self, lib)
    if record is not None and lib == LATE["lib"]:
        time.sleep(0.3)
    if record is None or lib != SLOW["lib"]:
        return record
    return lambda seconds: record(seconds + 0.1)


Key.take = take
expect = None
for flag, lib, choice in (("--slow-ucc-on", "ucc", "mpi"), ("--slow-mpi-on", "mpi", "ucc")):
    if flag in sys.argv:
        if int(sys.argv[sys.argv.index(flag) + 1]) == RANK:
            SLOW["lib"] = lib
        expect = choice

_call = Auto._call
general: list[tuple[str, str]] = []  # (library, collective) of each call on auto's general path


def logged(self, lib: str, name: str, args: tuple):
    general.append((lib, name))
    return _call(self, lib, name, args)


Auto._call = logged


def both(call, make, what: str, calls: int = CALLS) -> None:
    """call(tensors, group) ``calls`` times on the auto group and on the MPI group: same
    bits."""
    for i in range(calls):
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
# MPI's turns of these blocking all_reduce calls ran inline, where a settled one runs, and
# were timed there: none went through auto's general path (posted, polled from Python)
assert ("mpi", "allreduce") not in general, general
for n in (2, 1024, 65536):
    assert len(AUTO._on.keys["allreduce", ucc_auto.size_class(4 * n)].samples["mpi"]) == SAMPLES
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
    assert state.kept in ("mpi", "ucc") and state.agreed is not None, key
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

if expect is None:  # a key settled on MPI, then UCC becomes the faster: overturned
    SLOW["lib"] = "ucc" if RANK == SIZE - 1 else None
    key = ("allreduce", ucc_auto.size_class(256))  # a size class not met above
    call = lambda ts, g: dist.all_reduce(ts[0], group=g)  # noqa: E731
    make = lambda i: [sample((64,), torch.float32, RANK + i)]  # noqa: E731
    both(call, make, "all_reduce before the overturn", ROUND + 1)
    state = auto.keys[key]
    assert state.kept == "mpi" and state.keep == KEEP
    SLOW["lib"] = "mpi" if RANK == SIZE - 1 else None  # now MPI is the slower
    both(call, make, "all_reduce as it is overturned", KEEP - 1 + ROUND + 1)
    libraries = [lib for k, lib in took if k is state]
    assert state.kept == "ucc" and state.keep == KEEP, (state.kept, state.keep)
    want = ["mpi", "ucc"] * (ROUND // 2)
    want = want + ["mpi"] + ["mpi"] * (KEEP - 1) + want + ["ucc"]  # round, keep, round, ucc
    assert libraries == want, libraries
    assert WORLD.allgather(libraries) == [libraries] * SIZE

    # A rank that joins UCC's timed calls late does not make UCC look slow: the others'
    # samples start with it (a barrier), so the 0.1 s that MPI's times carry decide.
    SLOW["lib"] = "mpi" if RANK == 0 else None
    LATE["lib"] = "ucc" if RANK == SIZE - 1 else None
    key = ("allreduce", ucc_auto.size_class(1024))  # another size class not met above
    make = lambda i: [sample((256,), torch.float32, RANK + i)]  # noqa: E731
    both(call, make, "all_reduce, a rank late to UCC's turns", ROUND + 1)
    assert auto.keys[key].kept == "ucc", auto.keys[key].agreed
    SLOW["lib"] = LATE["lib"] = None

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
