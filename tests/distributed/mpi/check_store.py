"""The MPI-served store: torch's Store semantics on every rank, waits, timeouts, many threads."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import _dist  # noqa: F401  (a failing rank aborts the job)
import torch.distributed as dist
from mpi4py import MPI

from pycomm.distributed import MPIStore

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
store = MPIStore(WORLD, timedelta(seconds=20))
ref = dist.HashStore()  # torch's own semantics, for comparison

# Rank-private keys: every operation agrees with HashStore.
for s in (store, ref):
    k = f"r{RANK}/"
    s.set(k + "a", b"1")
    s.set(k + "s", "text")
assert store.get(f"r{RANK}/s") == ref.get(f"r{RANK}/s") == b"text"
assert store.add(f"r{RANK}/n", 5) == ref.add(f"r{RANK}/n", 5) == 5
assert store.add(f"r{RANK}/n", -2) == ref.add(f"r{RANK}/n", -2) == 3
for key, expected, desired in (
    ("a", b"1", b"2"),
    ("a", b"x", b"3"),
    ("new", b"", b"z"),
    ("no", b"e", b"d"),
):
    k = f"r{RANK}/{key}"
    assert store.compare_set(k, expected, desired) == ref.compare_set(k, expected, desired), key
assert store.get(f"r{RANK}/a") == b"2" and store.get(f"r{RANK}/new") == b"z"
assert store.check([f"r{RANK}/a"]) and not store.check([f"r{RANK}/missing"])
store.append(f"r{RANK}/log", b"ab")
store.append(f"r{RANK}/log", b"cd")
assert store.get(f"r{RANK}/log") == b"abcd"
store.multi_set([f"r{RANK}/m1", f"r{RANK}/m2"], [b"x", b"y"])
assert store.multi_get([f"r{RANK}/m1", f"r{RANK}/m2"]) == [b"x", b"y"]
assert store.delete_key(f"r{RANK}/m1") and not store.delete_key(f"r{RANK}/m1")
WORLD.Barrier()
# Waiting for keys another rank writes later; a shared counter.
nxt = (RANK + 1) % SIZE
got = {}
reader = threading.Thread(target=lambda: got.update(v=store.get(f"later/{nxt}")))
reader.start()
time.sleep(0.05)
store.set(f"later/{RANK}", str(RANK))
store.wait([f"later/{r}" for r in range(SIZE)])
reader.join()
assert got["v"] == str(nxt).encode()
assert store.add("counter", 1) >= 1
WORLD.Barrier()
assert store.get("counter") == str(SIZE).encode()
# A key nobody writes: the wait times out with DistStoreError, on every rank.
start = time.monotonic()
try:
    store.wait(["never"], timedelta(seconds=1))
except dist.DistStoreError as exc:
    assert "never" in str(exc) and 0.9 < time.monotonic() - start < 8
else:
    raise AssertionError("wait for a missing key did not time out")
WORLD.Barrier()
n = store.num_keys()
assert n == SIZE * 7 + 1, n  # a s n new log m2 later/r per rank, and the counter
WORLD.Barrier()
# Many threads at once on every rank.
threads = [threading.Thread(target=lambda i=i: store.add(f"t{i}", 1)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
WORLD.Barrier()
assert all(store.get(f"t{i}") == str(SIZE).encode() for i in range(8))
WORLD.Barrier()
if RANK == 0:
    print("store: passed", flush=True)
