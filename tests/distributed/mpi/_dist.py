"""Helpers for the torch backend's MPI test scripts (one process per rank under mpiexec)."""

from __future__ import annotations

import hashlib
import sys
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
from mpi4py import MPI

import pycomm.distributed  # noqa: F401  (registers "mpiucc" and "mpi://")

FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
INTS = (torch.int8, torch.uint8, torch.int32, torch.int64)
DTYPES = FLOATS + INTS


def _abort_on_error(*exc_info: object) -> None:
    # A failing rank ends the job at once instead of leaving the others to wait for it.
    sys.__excepthook__(*exc_info)
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(1)


sys.excepthook = _abort_on_error

# torch 2.13 calls all_gather_into_tensor and friends deprecated; they are still tested here.
warnings.filterwarnings("ignore", category=FutureWarning, module="torch")


def init(timeout_s: float = 60.0) -> tuple[int, int, dist.ProcessGroup]:
    """mpiucc on the world through mpi://, plus a gloo group on the same ranks (the reference)."""
    dist.init_process_group("mpiucc", init_method="mpi://", timeout=timedelta(seconds=timeout_s))
    gloo = dist.new_group(backend="gloo")
    return dist.get_rank(), dist.get_world_size(), gloo


def sample(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Values whose sums and products are exact in every dtype (small multiples of 1/4)."""
    g = torch.Generator().manual_seed(seed)
    v = torch.randint(-3, 4, shape, generator=g)
    if dtype == torch.uint8:
        v = v.abs()
    if dtype.is_floating_point:
        return (v.to(torch.float64) / 4).to(dtype)
    return v.to(dtype)


def digest(t: torch.Tensor) -> str:
    raw = t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return hashlib.sha256(raw).hexdigest()


def same_bits_everywhere(t: torch.Tensor, what: str, group: dist.ProcessGroup) -> None:
    """Assert t's bytes are identical on every rank (checked through the given group)."""
    got = [None] * dist.get_world_size(group)
    dist.all_gather_object(got, digest(t), group=group)
    assert len(set(got)) == 1, f"{what}: bits differ across ranks"


def assert_equal(got: torch.Tensor, want: torch.Tensor, what: str, exact: bool = True) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, f"{what}: {got} vs {want}"
    if exact:
        assert torch.equal(got, want), f"{what}: got {got}, want {want}"
    else:
        torch.testing.assert_close(got, want, msg=what)


def passed(name: str) -> None:
    dist.barrier()
    if dist.get_rank() == 0:
        print(f"{name}: passed", flush=True)
    dist.destroy_process_group()
    sys.stdout.flush()
