"""DDP (on gloo) with mpiucc_compress_hook when one rank's gradient holds NaN or Inf: every
rank counts the bucket in state.stats.nonfinite, the loop skips that step like GradScaler,
the residuals stay finite, and training goes on with identical weights on every rank."""

from __future__ import annotations

import sys

import numpy as np
import torch
import torch.distributed as dist
from mpi4py import MPI
from torch.nn.parallel import DistributedDataParallel as DDP

from pycomm.distributed.hooks import CompressHookState, mpiucc_compress_hook

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
STEPS, BAD_STEPS = 12, {4: np.nan, 7: np.inf}


def train(state: CompressHookState) -> tuple[list[float], torch.nn.Module, int]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.GELU(), torch.nn.Linear(256, 4))
    ddp = DDP(model, bucket_cap_mb=0.05)  # several buckets
    ddp.register_comm_hook(state, mpiucc_compress_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    bad = {"value": None}

    def poison(g: torch.Tensor) -> torch.Tensor:  # one element of one rank's gradient
        if bad["value"] is None or RANK != SIZE - 1:
            return g
        g = g.clone()
        g.view(-1)[5] = bad["value"]
        return g

    model[2].weight.register_hook(poison)
    g = torch.Generator().manual_seed(1 + RANK)
    target = torch.randn(32, 4, generator=torch.Generator().manual_seed(7))
    losses, skipped = [], 0
    for step in range(STEPS):
        bad["value"] = BAD_STEPS.get(step)
        x = torch.randn(64, 32, generator=g)
        opt.zero_grad()
        before = state.stats.nonfinite
        loss = torch.nn.functional.mse_loss(ddp(x), x @ target)
        loss.backward()
        if state.stats.nonfinite == before:
            opt.step()
        else:
            skipped += 1
            assert step in BAD_STEPS, f"step {step} counted as non-finite"
            assert state.stats.nonfinite == before + 1, "one bucket holds the bad gradient"
        if step in BAD_STEPS and state.error_feedback:  # exact: the bad bucket's is emptied
            kept = state.residuals_by_name(list(model.named_parameters()))["params"]
            assert not np.asarray(kept["2.weight"]).any(), f"step {step}: residual not reset"
        for r in state.residuals.values():
            assert np.isfinite(r.worker).all(), f"step {step}: residual poisoned"
            assert all(np.isfinite(s).all() for s in r.server.values()), step
        losses.append(loss.item())
    return losses, model, skipped


def main() -> None:
    dist.init_process_group("gloo", init_method=f"file://{sys.argv[1]}", rank=RANK, world_size=SIZE)
    for codec, params in (
        ("ebq", {"error_bound": 1e-3, "mode": "rel"}),
        ("int8", {}),
        ("sign", {}),
        ("fp16", {}),
        ("topk", {"levels": 16}),
    ):
        state = CompressHookState(codec, min_compress_numel=0, **params)
        losses, model, skipped = train(state)
        assert skipped == len(BAD_STEPS), f"{codec}: skipped {skipped} steps"
        assert np.isfinite(losses).all(), f"{codec}: {losses}"
        flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()
        assert np.isfinite(flat).all(), f"{codec}: weights not finite"
        same = COMM.allgather(flat.tobytes())
        assert all(s == same[0] for s in same), f"{codec}: weights differ across ranks"
    dist.destroy_process_group()
    if RANK == 0:
        print("ddp non-finite checks passed on", SIZE, "ranks")


if __name__ == "__main__":
    try:
        main()
    except BaseException:  # one failing rank must not leave the others waiting
        import traceback

        traceback.print_exc()
        COMM.Abort(1)
