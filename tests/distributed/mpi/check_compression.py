"""A compression policy on an FSDP2 group: gradients by ebq with error feedback, weights by
int8; training stays within a stated tolerance of exact, masters stay exact, and the error
feedback survives a checkpoint (state_dict and pickle)."""

from __future__ import annotations

import io
import pickle

import torch
import torch.distributed as dist
from _dist import passed, same_bits_everywhere
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.distributed.tensor import DTensor

import pycomm
from pycomm.distributed import Compression, get_compression, set_compression

#: Loss after STEPS steps, compressed against exact: relative gap allowed.
LOSS_TOLERANCE = 0.02
STEPS = 12

dist.init_process_group("mpiucc", init_method="mpi://")
RANK, SIZE = dist.get_rank(), dist.get_world_size()
MESH = init_device_mesh("cpu", (SIZE,), mesh_dim_names=("dp",))
GROUP = MESH.get_group("dp")


def policy() -> Compression:
    return Compression(
        reduce_scatter=pycomm.CodecSpec("ebq", error_bound=1e-2, mode="rel"),
        all_gather=pycomm.CodecSpec("int8", block_size=64),
        min_numel=256,
    )


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(32, 128), torch.nn.GELU(), torch.nn.Linear(128, 128), torch.nn.GELU(),
        torch.nn.Linear(128, 8),
    )  # fmt: skip
    for layer in net:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=MESH)
    return fully_shard(net, mesh=MESH)


def batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(100 * RANK + step)
    x = torch.randn(16, 32, generator=g)
    return x, torch.sin(x[:, :8] * 2)  # a target the net can learn


def train(net: torch.nn.Module, opt: torch.optim.Optimizer, steps: range) -> list[float]:
    losses = []
    for step in steps:
        x, y = batch(step)
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses


def exact_parameters(net: torch.nn.Module) -> list[torch.Tensor]:
    """The full parameters, gathered with compression off."""
    saved = get_compression(GROUP)
    set_compression(GROUP)
    full = [p.full_tensor().detach().clone() for p in net.parameters()]
    set_compression(GROUP, saved)
    return full


def mean_loss(losses: list[float]) -> float:
    t = torch.tensor(losses[-3:]).mean().reshape(1)
    dist.all_reduce(t)
    return t.item() / SIZE


# 1. Uncompressed against compressed training, from the same start.
set_compression(GROUP)
net = make_model()
exact = mean_loss(train(net, torch.optim.Adam(net.parameters(), lr=3e-3), range(STEPS)))
net = make_model()
pol = set_compression(GROUP, policy())
compressed = mean_loss(train(net, torch.optim.Adam(net.parameters(), lr=3e-3), range(STEPS)))
gap = abs(compressed - exact) / exact
assert gap <= LOSS_TOLERANCE, f"loss {compressed} vs exact {exact}: {gap:.2%}"
rs, ag = pol.stats["reduce_scatter"], pol.stats["all_gather"]
assert rs.calls > 0 and ag.calls > 0 and pol.residuals, "the policy compressed nothing"
assert rs.frame_bytes < rs.raw_bytes / 2 and ag.frame_bytes < ag.raw_bytes / 3, (rs, ag)
assert any(r.any() for r in pol.residuals.values()), "error feedback kept nothing"
for p in exact_parameters(net):
    same_bits_everywhere(p, "parameters after compressed training", GROUP)

# 2. Masters stay exact: a compressed gather leaves the shards alone; the gathered weights are
# the same bits on every rank and within int8's step of the masters.
shards = [p.to_local().clone() for p in net.parameters()]
full = exact_parameters(net)
fsdp_modules = [m for m in net.modules() if isinstance(m, FSDPModule)]
for m in fsdp_modules:
    m.unshard()
for p, f in zip(net.parameters(), full, strict=True):
    gathered = p.detach().clone()
    assert not isinstance(p, DTensor)
    same_bits_everywhere(gathered, "weights gathered through int8", GROUP)
    step = f.abs().max() / 127
    assert (gathered - f).abs().max() <= step, "gathered weights beyond int8's step"
for m in fsdp_modules:
    m.reshard()
for p, s in zip(net.parameters(), shards, strict=True):
    assert torch.equal(p.to_local(), s), "a compressed all_gather changed a master shard"


# 3. Error feedback survives a checkpoint: 4 + 4 steps with the policy saved and restored in
# between equal 8 steps in one go, bit for bit; a policy without the residuals does not.
def run(split: str) -> list[float]:
    net = make_model()
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    set_compression(GROUP, policy())
    losses = train(net, opt, range(4))
    if split == "state_dict":
        buf = io.BytesIO()
        torch.save(get_compression(GROUP).state_dict(), buf)
        restored = policy()
        buf.seek(0)
        restored.load_state_dict(torch.load(buf))
        set_compression(GROUP, restored)
    elif split == "pickle":
        set_compression(GROUP, pickle.loads(pickle.dumps(get_compression(GROUP))))
    elif split == "fresh":
        set_compression(GROUP, policy())
    losses += train(net, opt, range(4, 8))
    return losses + [p.sum().item() for p in exact_parameters(net)]


straight = run("none")
assert run("state_dict") == straight, "residuals lost through state_dict"
assert run("pickle") == straight, "residuals lost through pickle"
assert run("fresh") != straight, "the residuals made no difference"


# 4. The group's compressed calls give pycomm's own bits, decoded straight into out: the input
# out's own block (FSDP2 gathers in place) or apart from it, float32 or bfloat16.
pol = set_compression(GROUP, policy())
pol.error_feedback = False
n = 512
shard = torch.randn(n, generator=torch.Generator().manual_seed(RANK))
want = torch.from_numpy(pycomm.allgather(shard.numpy(), GROUP.comm, pol.all_gather).reshape(-1))
out = torch.empty(n * SIZE)
block = out[RANK * n : (RANK + 1) * n]
block.copy_(shard)
dist.all_gather_into_tensor(out, block, group=GROUP)
apart = torch.empty(n * SIZE)
dist.all_gather_into_tensor(apart, shard, group=GROUP)
assert torch.equal(out, want) and torch.equal(apart, want), "all_gather differs from pycomm's"
half = torch.empty(n * SIZE, dtype=torch.bfloat16)
dist.all_gather_into_tensor(half, shard.bfloat16(), group=GROUP)
wide = shard.bfloat16().float().numpy()
want = torch.from_numpy(pycomm.allgather(wide, GROUP.comm, pol.all_gather).reshape(-1))
assert torch.equal(half, want.bfloat16()), "bfloat16 all_gather differs from pycomm's"
grads = torch.randn(n * SIZE, generator=torch.Generator().manual_seed(10 + RANK))
out = torch.empty(n)
dist.reduce_scatter_tensor(out, grads, group=GROUP)
want = pycomm.reduce_scatter(grads.numpy(), GROUP.comm, pol.reduce_scatter)
assert torch.equal(out, torch.from_numpy(want)), "reduce_scatter differs from pycomm's"

set_compression(GROUP)
if RANK == 0:
    print(f"compressed loss {compressed:.5f}, exact {exact:.5f} ({gap:.2%})", flush=True)
passed("compression policy")
