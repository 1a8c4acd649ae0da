"""The replica check passes on a fresh stage and names a parameter nudged by one ulp.

    mpiexec -n 4 python check_replicas.py DP TP [fsdp]

Nudges, in turn: one TP rank's LayerNorm weight (a TP-replicated parameter), then one DP
replica's shard of a column-parallel weight; every rank must raise ReplicaMismatch naming it.
With ``fsdp`` the stage is sharded over DP (weights gathered through int8): a master shard
changed on one rank is no mismatch (every rank gathers the same bits from it), a gathered
weight that differs on one rank is.
"""

import contextlib
import sys

import torch
import torch.distributed as dist

import pycomm
import pycomm.distributed  # noqa: F401
from pycomm.train.groups import Layout, build_groups
from pycomm.train.meters import Meters
from pycomm.train.model import ModelConfig
from pycomm.train.replicas import ReplicaCheck, ReplicaMismatch
from pycomm.train.sharded import ShardedDataParallel
from pycomm.train.stage import PipelineStage
from pycomm.train.tensor_parallel import TensorParallel, is_tp_sharded

dp, tp = int(sys.argv[1]), int(sys.argv[2])
fsdp = sys.argv[3:] == ["fsdp"]
dist.init_process_group("mpiucc", init_method="mpi://")
groups = build_groups(Layout(dp, tp, 1))
tpc = TensorParallel(groups.comm("tp"), pycomm.CodecSpec(), pycomm.CodecSpec())
stage = PipelineStage(ModelConfig(layers=2, width=32, heads=4, seq=16), 0, 1, tpc, seed=1)
if fsdp:
    replicated = [n for n, _ in stage.named_parameters() if not is_tp_sharded(n)] if tp > 1 else []
    int8 = pycomm.CodecSpec("int8", block_size=64)
    sharded = ShardedDataParallel(
        stage, groups.layout, pycomm.CodecSpec(), int8, Meters(), replicated=replicated
    )
    sharded.policy.min_numel = 64  # this tiny stage's weights go through int8 too
    skew = {"name": None}  # a gathered weight to move on the last DP rank

    @contextlib.contextmanager
    def gathered():
        with sharded.gathered():
            if skew["name"] and groups.dp_rank == dp - 1:
                p = dict(stage.named_parameters())[skew["name"]]
                with torch.no_grad():
                    p.view(-1)[3] = torch.nextafter(p.view(-1)[3], torch.tensor(float("inf")))
            yield

    check = ReplicaCheck(stage, groups, gathered)
else:
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
if fsdp:
    name = "blocks.1.mlp.fc.weight"
    shard = params[name].to_local()
    with torch.no_grad():
        if groups.dp_rank == 0:
            shard.view(-1)[3] += 1.0
    check(step=1)  # a changed master: every rank gathers it alike
    skew["name"] = name
    try:
        check(step=7)
        raise AssertionError("the check missed gathered weights that differ")
    except ReplicaMismatch as exc:
        says = str(exc)
    assert f"'{name}'" in says and "DP replicas differ" in says and "after step 7" in says, says
    skew["name"] = None
    check(step=8)
    assert check.checks == 3
elif tp > 1:
    says = nudged("blocks.0.ln1.weight", groups.tp_rank == 1)  # on all its DP replicas
    assert "'blocks.0.ln1.weight'" in says and "TP ranks differ" in says, says
    assert "after step 7" in says and says.count("\n  '") == 1, says
if dp > 1 and not fsdp:
    says = nudged("blocks.1.mlp.fc.weight", groups.dp_rank == dp - 1 and groups.tp_rank == 0)
    assert "'blocks.1.mlp.fc.weight'" in says and "DP replicas differ" in says, says
    assert "TP rank(s) [0]" in says, says
if not fsdp:
    check(step=8)  # restored: passes again
    assert check.checks == 2
else:
    sharded.close()
check.close()
tpc.close()
dist.barrier()
if groups.rank == 0:
    print("replica check: passed", flush=True)
dist.destroy_process_group()
