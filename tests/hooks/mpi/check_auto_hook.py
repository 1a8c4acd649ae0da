"""The DDP hook with codec="auto" (DDP on gloo): compressed where raw measures slow, raw where
compressing does (the slow paths emulated: 20 ms more a call), never lossy for a lossless
contract, and training stays near plain DDP."""

from __future__ import annotations

import sys

import torch.distributed as dist
from check_ddp_hooks import RANK, SIZE, train
from mpi_helpers import slowed

from pycomm.collectives import auto_state, reduction
from pycomm.collectives.engine import engine_of
from pycomm.distributed.hooks import CompressHookState, mpiucc_allreduce_hook, mpiucc_compress_hook


def state_on(link: tuple[float, float] | None, **params) -> CompressHookState:
    """A hook state whose communicator's link is pinned (latency s, bytes/s)."""
    state = CompressHookState("auto", **params)
    engine_of(state.communicator()).link.pin(*(link or (None,)))
    return state


def kept(state: CompressHookState) -> set:
    """The picks the buckets' keys last kept (None: none kept)."""
    return {e.last for e in auto_state.observed(engine_of(state.communicator())).keys.values()}


def main() -> None:
    dist.init_process_group("gloo", init_method=f"file://{sys.argv[1]}", rank=RANK, world_size=SIZE)
    base = train()
    slow = state_on((50e-6, 125e6), error_bound=1e-3, mode="rel")
    with slowed(reduction.plain, "allreduce"):
        losses = train(mpiucc_compress_hook, slow)
    assert losses[-1] <= base[-1] * 1.25 + 0.02, f"auto, raw slow: {losses[-1]} vs {base[-1]}"
    assert slow.stats.frame_bytes < slow.stats.raw_bytes, "auto, raw slow, sent raw"
    assert "raw" not in kept(slow), kept(slow)
    fast = state_on((50e-6, 125e6), error_bound=1e-3, mode="rel")  # the model says compress
    with slowed(reduction, "run_segments"):
        train(mpiucc_compress_hook, fast)
    # raw everywhere (None: raw decided each call, too near the bound in float32 to keep)
    assert kept(fast) <= {"raw", None}, f"auto kept {kept(fast)} where compressing is slower"
    plain = train(mpiucc_allreduce_hook, CompressHookState("ebq"))
    lossless = state_on((50e-6, 125e6))  # no bound: lossless, whatever the link
    assert train(mpiucc_compress_hook, lossless) == plain, "lossless auto is not exact"
    assert lossless.stats.frame_bytes == lossless.stats.raw_bytes
    dist.destroy_process_group()
    if RANK == 0:
        print("auto hook checks passed on", SIZE, "ranks")


if __name__ == "__main__":
    main()
