"""TP-replicated parameters stay bitwise identical under a compressed DP codec (dp 2 x tp 2).

    mpiexec -n 4 python check_replicated_grads.py

Gradients are drawn so that the TP-sharded ones differ between the TP ranks and hold each
bucket's extremes (so an ebq grid relative to the bucket's range differs between TP ranks),
while the replicated ones are the same on the TP ranks of a DP rank. Averaged inside DDP's
shared buckets the replicas drift apart (the replica check must say so); in their own bucket
(``DataParallel(replicated=...)``) they stay identical, and the DP result is within the bound.
With codec="auto" the two DP groups are made to choose differently (one link pinned slow, one
fast): without the TP group the replicas drift; with it (``tp_comm``) they stay identical.
"""

import torch
import torch.distributed as dist

import pycomm
import pycomm.distributed  # noqa: F401
from pycomm.collectives.engine import engine_of
from pycomm.train.config import parse_codec
from pycomm.train.data_parallel import DataParallel
from pycomm.train.groups import Layout, build_groups
from pycomm.train.meters import Meters
from pycomm.train.model import ModelConfig
from pycomm.train.replicas import ReplicaCheck, ReplicaMismatch
from pycomm.train.stage import PipelineStage
from pycomm.train.tensor_parallel import TensorParallel, is_tp_sharded

torch.set_num_threads(1)
dist.init_process_group("mpiucc", init_method="mpi://")
groups = build_groups(Layout(2, 2, 1))
tpc = TensorParallel(groups.comm("tp"), pycomm.CodecSpec(), pycomm.CodecSpec())
cfg = ModelConfig(layers=2, width=32, heads=4, seq=16)
#: Steps of the auto runs: raw's first call, then the trials, where the two groups' orders part.
AUTO_STEPS = 8


def train(own_bucket: bool, steps: int = 3, codec: str = "ebq:rel:1e-2", tp=None) -> None:
    """SGD steps on synthetic gradients; the replica check after each (raises on drift)."""
    stage = PipelineStage(cfg, 0, 1, tpc, seed=1)
    names = [n for n, _ in stage.named_parameters()]
    replicated = [n for n in names if not is_tp_sharded(n)] if own_bucket else ()
    spec = parse_codec(codec)
    dp = DataParallel(stage, groups.dp, spec, Meters(), replicated=replicated, tp_comm=tp)
    if spec.auto:  # the first TP rank's DP group on a slow link (it compresses), the other fast
        slow = groups.tp_rank == 0
        engine_of(dp._replicated.comm).link.pin(50e-6, 125e6 if slow else 10e9)
    check = ReplicaCheck(stage, groups)
    opt = torch.optim.SGD(stage.parameters(), lr=0.1)
    try:
        for step in range(steps):
            same = torch.Generator().manual_seed(100 * step + groups.dp_rank)
            own = torch.Generator().manual_seed(
                1000 + 100 * step + 10 * groups.dp_rank + groups.tp_rank
            )
            loss = torch.zeros(())
            for name, p in stage.named_parameters():
                if is_tp_sharded(name):
                    g = torch.randn(p.shape, generator=own) * (4 + 4 * groups.tp_rank)
                else:
                    g = torch.randn(p.shape, generator=same)
                loss = loss + (p * g).sum()
            opt.zero_grad()
            dp.backward(loss, None, last=True)
            opt.step()
            check(step + 1)
    finally:
        check.close()
        dp.close()


try:
    train(own_bucket=False)
except ReplicaMismatch as exc:
    assert "TP ranks differ" in str(exc), exc
else:
    raise AssertionError("shared buckets kept the replicas identical: the test lost its point")
train(own_bucket=True)
try:  # (every round times raw first, in both groups: they part at a later call)
    train(own_bucket=True, codec="auto:rel:1e-2", steps=AUTO_STEPS)
except ReplicaMismatch as exc:
    assert "TP ranks differ" in str(exc), exc
else:
    raise AssertionError("auto chose alike in both DP groups: the test lost its point")
train(own_bucket=True, codec="auto:rel:1e-2", tp=groups.comm("tp"), steps=AUTO_STEPS)
tpc.close()
dist.barrier()
if groups.rank == 0:
    print("replicated gradients: passed", flush=True)
dist.destroy_process_group()
