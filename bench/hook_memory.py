"""Peak extra memory of ``mpiucc_compress_hook`` for one bucket, relative to the bucket's size.

Run under MPI (``mpiexec -n 2 python bench/hook_memory.py``; one rank works without mpiexec).
DDP on gloo trains a model whose gradients fill one bucket; a wrapper around the hook waits
for each bucket's future and reads two peaks since the hook was called:

* allocated: tracemalloc's peak (numpy arrays and Python buffers, on every thread). It counts
  address space: ebq reserves its output buffer for the worst case (about 2x the input) and
  trims it to the frame, and the untouched part of that reserve is counted here.
* resident: the process's peak resident memory (Linux: VmHWM, reset through
  /proc/self/clear_refs), which also sees what the C library, MPI and torch allocate.

"first" is the first step, which allocates the bucket's error-feedback residual (1x the bucket,
kept for the run); "steady" is the worst later step. Rank 0 prints the table (the worst rank's
figures); ``--max-ratio R`` makes every rank exit with status 1 when a steady figure exceeds R.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import tracemalloc

import torch
import torch.distributed as dist
from mpi4py import MPI
from torch.nn.parallel import DistributedDataParallel as DDP

from pycomm.distributed import staging
from pycomm.distributed.hooks import CompressHookState, mpiucc_compress_hook

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
LOCK = threading.Lock()
CODECS = {
    "ebq": {"error_bound": 1e-3, "mode": "rel"},
    "int8": {},
    "sign": {},
}


def resident_peak_reset() -> int | None:
    """Reset the peak resident memory; the resident bytes now (None off Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status_kb("VmRSS") * 1024
    except OSError:
        return None


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def measure(codec: str, width: int, error_feedback: bool, steps: int = 3) -> list[tuple]:
    """(allocated, resident) peak extra bytes over the bucket's bytes, per step."""
    torch.manual_seed(0)
    model = torch.nn.Linear(width, width, bias=False)
    ddp = DDP(model, bucket_cap_mb=1 << 12)  # one bucket
    state = CompressHookState(codec, error_feedback=error_feedback, **CODECS[codec])
    ratios = []

    def hook(state, bucket):  # no annotations: torch checks them at run time
        nbytes = bucket.buffer().numel() * bucket.buffer().element_size()
        with LOCK:  # one measurement at a time in this process
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            rss = resident_peak_reset()
            fut = mpiucc_compress_hook(state, bucket)
            fut.wait()
            allocated = (tracemalloc.get_traced_memory()[1] - base) / nbytes
            resident = None if rss is None else (_status_kb("VmHWM") * 1024 - rss) / nbytes
        ratios.append((allocated, resident))
        return fut

    ddp.register_comm_hook(state, hook)
    x = torch.randn(8, width, generator=torch.Generator().manual_seed(RANK))
    for _ in range(steps):
        model.zero_grad()
        ddp(x).square().mean().backward()
    return ratios


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=2048, help="bucket = width^2 float32")
    ap.add_argument("--max-ratio", type=float, default=None)
    ap.add_argument("--segment", type=int, default=None, help="the hook's pipeline segment")
    args = ap.parse_args()
    if args.segment:
        staging.SEGMENT_COUNT = args.segment
    store = tempfile.mktemp(prefix="hook_memory_") if RANK == 0 else None
    store = COMM.bcast(store)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=RANK, world_size=SIZE)
    tracemalloc.start()
    rows, worst = [], 0.0
    for codec in CODECS:
        for ef in (True, False):
            ratios = measure(codec, args.width, ef)
            figures = []
            for kind in (0, 1):  # allocated, resident
                mine = [r[kind] for r in ratios]
                if None in mine:
                    figures += [float("nan")] * 2
                    continue
                figures += [max(COMM.allgather(mine[0])), max(COMM.allgather(max(mine[1:])))]
            worst = max(worst, figures[1], figures[3] if figures[3] == figures[3] else 0.0)
            rows.append((codec, "yes" if ef else "no", *figures))
    tracemalloc.stop()
    dist.destroy_process_group()
    if RANK == 0:
        mb = args.width**2 * 4 / 1e6
        print(
            f"peak extra memory of mpiucc_compress_hook over the bucket's size: {SIZE} rank(s), "
            f"bucket {mb:.1f} MB, segment {staging.SEGMENT_COUNT} elements"
        )
        print(
            "| codec | error feedback | allocated, first | allocated, steady "
            "| resident, first | resident, steady |"
        )
        print("|---|---|---|---|---|---|")
        for codec, ef, *f in rows:
            print(f"| {codec} | {ef} | " + " | ".join(f"{v:.2f}x" for v in f) + " |")
        if os.path.exists(store):
            os.unlink(store)
    if args.max_ratio is not None and worst > args.max_ratio:
        if RANK == 0:
            print(f"FAILED: {worst:.2f}x exceeds {args.max_ratio}x", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
