"""dp x tp x pp training equals the single-process model: loss, gradients, two steps.

    mpiexec -n N python check_equivalence.py DP TP PP [codec]

With a codec (e.g. ebq:abs:1e-6) on TP and PP, the same comparison with a looser tolerance.
"""

import sys

import torch
import torch.distributed as dist
from mpi4py import MPI

import pycomm
import pycomm.distributed  # noqa: F401
from pycomm.train.config import Codecs, parse_codec
from pycomm.train.data_parallel import DataParallel
from pycomm.train.groups import Layout, build_groups
from pycomm.train.loop import micro_batches
from pycomm.train.meters import Meters
from pycomm.train.model import GPT, ModelConfig, lm_loss
from pycomm.train.pipe_link import PipeLink
from pycomm.train.pipeline import PipelineRunner
from pycomm.train.stage import PipelineStage
from pycomm.train.tensor_parallel import TensorParallel, shard_block

torch.set_num_threads(1)
dp, tp, pp = (int(a) for a in sys.argv[1:4])
codec = parse_codec(sys.argv[4]) if len(sys.argv) > 4 else pycomm.CodecSpec()
RTOL, ATOL = (1e-4, 2e-6) if not codec.compressed else (2e-2, 2e-4)
cfg = ModelConfig(layers=3, width=32, heads=4, seq=16)
BATCH, MICRO, SEED = 8, 2, 3

dist.init_process_group("mpiucc", init_method="mpi://")
groups = build_groups(Layout(dp, tp, pp))
rank = dist.get_rank()
codecs = Codecs(codec, codec, codec, pycomm.CodecSpec())
meters = Meters()
tpc = TensorParallel(groups.comm("tp"), codecs.tp_fwd, codecs.tp_bwd, meters)
stage = PipelineStage(cfg, groups.pp_rank, pp, tpc, SEED)
link = PipeLink(groups.comm("pp"), codecs.pp, meters) if pp > 1 else None
data_parallel = DataParallel(stage, groups.dp, codecs.dp, meters, bucket_mb=0.01)
runner = PipelineRunner(stage, data_parallel, link, groups, cfg)
# Adam turns the codec's tiny gradient errors on near-zero gradients into full-size steps.
optimizer = torch.optim.SGD if codec.compressed else torch.optim.AdamW
opt = optimizer(stage.parameters(), lr=1e-2)

reference = GPT(cfg, SEED)
ref_opt = optimizer(reference.parameters(), lr=1e-2)
gen = torch.Generator().manual_seed(11)
world = MPI.COMM_WORLD


def local_reference_grads() -> dict[str, torch.Tensor]:
    grads = {n: p.grad for n, p in reference.named_parameters()}
    out = {}
    for i in stage.layers:
        prefix = f"blocks.{i}."
        block = {n[len(prefix) :]: g for n, g in grads.items() if n.startswith(prefix)}
        for n, g in shard_block(block, cfg, groups.tp_rank, tp).items():
            out[prefix + n] = g
    for n, g in grads.items():
        if not n.startswith("blocks."):
            out[n] = g
    return out


for step in range(2):
    data = torch.randint(0, 256, (BATCH, cfg.seq + 1), generator=gen)
    tokens, targets = data[:, :-1], data[:, 1:]
    opt.zero_grad()
    loss = runner.run(micro_batches(tokens, targets, groups, MICRO), train=True)
    ref_opt.zero_grad()
    ref_loss = lm_loss(reference(tokens), targets)
    ref_loss.backward()
    reports = stage.is_last and groups.tp_rank == 0
    total = world.allreduce(loss / dp if reports else 0.0)
    assert abs(total - ref_loss.item()) <= RTOL * abs(ref_loss.item()) + ATOL, (total, ref_loss)
    ref = local_reference_grads()
    worst = 0.0
    for name, p in stage.named_parameters():
        assert p.grad is not None, name
        g, r = p.grad, ref[name]
        assert g.shape == r.shape, (name, g.shape, r.shape)
        err = ((g - r).abs() / (RTOL * r.abs().max() + ATOL)).max().item()
        worst = max(worst, err)
        assert err <= 1, f"rank {rank} step {step} {name}: {(g - r).abs().max()} vs {r.abs().max()}"
    opt.step()
    ref_opt.step()
    if rank == 0:
        print(f"step {step}: loss {total:.6f} reference {ref_loss.item():.6f}", flush=True)

if link is not None:
    link.close()
tpc.close()
world.Barrier()
if rank == 0:
    print(f"equivalence dp={dp} tp={tp} pp={pp} {sys.argv[4:] or ''}: passed", flush=True)
dist.destroy_process_group()
