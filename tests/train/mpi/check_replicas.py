"""The replica check passes on a fresh stage and names a parameter nudged by one ulp.

    mpiexec -n 4 python check_replicas.py DP TP

Nudges, in turn: one TP rank's LayerNorm weight (a TP-replicated parameter), then one DP
replica's shard of a column-parallel weight; every rank must raise ReplicaMismatch naming it.
"""

import sys

import torch
import torch.distributed as dist

import pycomm
import pycomm.distributed  # noqa: F401
from pycomm.train.groups import Layout, build_groups
from pycomm.train.model import ModelConfig
from pycomm.train.replicas import ReplicaCheck, ReplicaMismatch
from pycomm.train.stage import PipelineStage
from pycomm.train.tensor_parallel import TensorParallel

dp, tp = int(sys.argv[1]), int(sys.argv[2])
dist.init_process_group("mpiucc", init_method="mpi://")
groups = build_groups(Layout(dp, tp, 1))
tpc = TensorParallel(groups.comm("tp"), pycomm.CodecSpec(), pycomm.CodecSpec())
stage = PipelineStage(ModelConfig(layers=2, width=32, heads=4, seq=16), 0, 1, tpc, seed=1)
check = ReplicaCheck(stage, groups)
params = dict(stage.named_parameters())


def nudged(name: str, where: bool) -> str:
    """Move one element of ``name`` by one ulp where ``where``; the check's message."""
    p = params[name]
    saved = p.detach().clone()
    with torch.no_grad():
        if where:
            p.view(-1)[3] = torch.nextafter(p.view(-1)[3], torch.tensor(float("inf")))
    try:
        check(step=7)
    except ReplicaMismatch as exc:
        return str(exc)
    finally:
        with torch.no_grad():
            p.copy_(saved)
    raise AssertionError(f"the check missed a one-ulp change of {name}")


check(step=0)
assert check.checks == 1
if tp > 1:
    says = nudged("blocks.0.ln1.weight", groups.tp_rank == 1)  # on all its DP replicas
    assert "'blocks.0.ln1.weight'" in says and "TP ranks differ" in says, says
    assert "after step 7" in says and says.count("\n  '") == 1, says
if dp > 1:
    says = nudged("blocks.1.mlp.fc.weight", groups.dp_rank == dp - 1 and groups.tp_rank == 0)
    assert "'blocks.1.mlp.fc.weight'" in says and "DP replicas differ" in says, says
    assert "TP rank(s) [0]" in says, says
check(step=8)  # restored: passes again
assert check.checks == 2
check.close()
tpc.close()
dist.barrier()
if groups.rank == 0:
    print("replica check: passed", flush=True)
dist.destroy_process_group()
