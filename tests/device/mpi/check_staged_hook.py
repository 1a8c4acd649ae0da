"""DDP with mpiucc_compress_hook on device buckets equals the CPU hook bit for bit: the
device codecs' frames (int8, fp16, ebq, with and without error feedback) and the staged
uncompressed path.

argv[1] "cpu": CPU buckets forced through ``staging.allreduce_bucket`` (the device codecs run
under Triton's interpreter when TRITON_INTERPRET=1, with a small hook segment); "cuda": real
CUDA buckets. Gradients are exact on both (loss = sum(w * c)), so the hook is the only thing
that could make them differ; every step's gradients and the error-feedback residuals must be
bitwise equal to the CPU hook's. Buckets exceed the hook's segment, so each runs several.
"""

import os
import sys

import torch
import torch.distributed as dist
from mpi4py import MPI
from torch.nn.parallel import DistributedDataParallel as DDP

import pycomm.distributed  # noqa: F401  (registers "mpiucc")
from pycomm.distributed import hooks, staging
from pycomm.distributed.hooks import CompressHookState, mpiucc_compress_hook

RANK, SIZE = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
if sys.argv[1] == "cpu":  # the interpreter is slow: a small segment, small buckets
    staging.SEGMENT_COUNT = 1 << 12
SEGMENT = staging.SEGMENT_COUNT
SIZES = (SEGMENT + 12_345, 3_001, 2 * SEGMENT + 7)
STEPS = 4


def staged_hook(
    state: CompressHookState, bucket: dist.GradBucket
) -> torch.futures.Future[torch.Tensor]:
    return hooks._allreduce_bucket(state, bucket, compress=True, staged=True)


class Linear(torch.nn.Module):
    def __init__(self, device: str) -> None:
        super().__init__()
        self.ws = torch.nn.ParameterList(
            torch.nn.Parameter(torch.zeros(n, device=device)) for n in SIZES
        )

    def forward(self, cs: list[torch.Tensor]) -> torch.Tensor:
        return sum((w * c).sum() for w, c in zip(self.ws, cs, strict=True))


def run(device: str, hook, codec: str, **params) -> tuple[list, CompressHookState]:
    model = DDP(Linear(device), bucket_cap_mb=4 * SEGMENT / (1 << 19))
    state = CompressHookState(codec, min_compress_numel=0, **params)
    model.register_comm_hook(state, hook)
    grads = []
    for step in range(STEPS):
        g = torch.Generator().manual_seed(100 * step + RANK)
        cs = [torch.randn(n, generator=g).to(device) for n in SIZES]
        cs[0][step] = float("inf") if step == 2 else cs[0][step]  # a non-finite step
        model.zero_grad()
        model(cs).backward()
        grads.append([w.grad.cpu().clone() for w in model.module.ws])
    return grads, state


def main() -> None:
    device = sys.argv[1]
    dist.init_process_group("mpiucc", init_method="mpi://")
    hook = staged_hook if device == "cpu" else mpiucc_compress_hook
    for codec, params in (
        ("int8", {}),
        ("fp16", {}),
        ("ebq", {"error_bound": 1e-3, "mode": "abs"}),
        ("ebq", {"error_bound": 1e-2, "mode": "rel", "error_feedback": False}),
        ("sign", {"error_feedback": False}),
        ("none", {}),
    ):
        want, ref = run("cpu", mpiucc_compress_hook, codec, **params)
        got, state = run(device, hook, codec, **params)
        for step, (a, b) in enumerate(zip(want, got, strict=True)):
            for x, y in zip(a, b, strict=True):
                assert torch.equal(x.view(torch.int32), y.view(torch.int32)), (codec, step)
        assert ref.residuals.keys() == state.residuals.keys(), codec
        on_device = device == "cuda" or os.environ.get("TRITON_INTERPRET") == "1"
        on_device = on_device and codec != "none"
        for fb in state.residuals.values():  # the device codecs keep them on the device
            assert isinstance(fb.worker, torch.Tensor) == on_device, codec
        for key, fb in ref.residuals.items():
            mine = state.residuals[key]
            worker = mine.worker
            worker = worker.cpu().numpy() if isinstance(worker, torch.Tensor) else worker
            assert (worker.view("u4") == fb.worker.view("u4")).all(), codec
            assert mine.server.keys() == fb.server.keys(), codec
            for chunk, r in fb.server.items():  # the two-phase allreduce's, on the host
                assert (mine.server[chunk].view("u4") == r.view("u4")).all(), codec
        assert state.stats.nonfinite == ref.stats.nonfinite == 1, codec
        mirrors = [k for k in state.staging if isinstance(k, int)]
        assert len(mirrors) == 2, codec  # one pinned mirror per bucket
    dist.destroy_process_group()
    if RANK == 0:
        print("staged hook equals the CPU hook on", device, "with", SIZE, "ranks: passed")


if __name__ == "__main__":
    main()
