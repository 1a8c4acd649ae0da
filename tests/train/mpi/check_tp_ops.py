"""The compressed TP all_reduce autograd functions on 2 ranks: forward and backward codecs.

mpiexec -n 2 python check_tp_ops.py
"""

import torch
from mpi4py import MPI

import pycomm
from pycomm.train.config import parse_codec
from pycomm.train.guard import Guard
from pycomm.train.model import Block, ModelConfig, init_parameters
from pycomm.train.tensor_parallel import (
    ParallelBlock,
    TensorParallel,
    copy_to_tensor_parallel,
    reduce_from_tensor_parallel,
    shard_block,
)

torch.set_num_threads(1)
world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
NONE = pycomm.CodecSpec()


def same_on_all_ranks(t: torch.Tensor) -> bool:
    mine = t.detach().numpy().tobytes()
    return all(b == mine for b in world.allgather(mine))


def exact_sum(t: torch.Tensor) -> torch.Tensor:
    acc = t.detach().double().numpy().copy()
    world.Allreduce(MPI.IN_PLACE, acc)
    return torch.from_numpy(acc)


gen = torch.Generator().manual_seed(100 + rank)

# 1. forward codec: the row-parallel output sum; backward is the identity, exactly.
tp = TensorParallel(world, parse_codec("ebq:abs:1e-4"), NONE)
x = (torch.randn(4, 8, 64, generator=gen) * (rank + 1)).requires_grad_()
y = reduce_from_tensor_parallel(x, tp)
assert (y.double() - exact_sum(x)).abs().max() <= 1e-4
assert not torch.equal(y.double(), exact_sum(x)), "the forward codec was not applied"
assert same_on_all_ranks(y)
upstream = torch.randn(4, 8, 64, generator=torch.Generator().manual_seed(7))
y.backward(upstream)
assert torch.equal(x.grad, upstream)
fwd, bwd = tp.meters.ops["tp_fwd"], tp.meters.ops["tp_bwd"]
assert (fwd.calls, bwd.calls) == (1, 0), (fwd, bwd)
assert fwd.frame_bytes < fwd.raw_bytes == x.numel() * 4
tp.close()

# 2. backward codec: forward is the identity, the input-gradient sum goes through bwd.
tp = TensorParallel(world, NONE, parse_codec("ebq:abs:1e-3"))
x = torch.randn(4, 8, 64, generator=gen).requires_grad_()
y = copy_to_tensor_parallel(x, tp)
assert torch.equal(y, x)
g = torch.randn(4, 8, 64, generator=gen)
y.backward(g)
assert (x.grad.double() - exact_sum(g)).abs().max() <= 1e-3
assert not torch.equal(x.grad.double(), exact_sum(g)), "the backward codec was not applied"
assert same_on_all_ranks(x.grad)
fwd, bwd = tp.meters.ops["tp_fwd"], tp.meters.ops["tp_bwd"]
assert (fwd.calls, bwd.calls) == (0, 1), (fwd, bwd)
assert bwd.frame_bytes < bwd.raw_bytes
tp.close()

# 3. a whole block: tight codecs give the full block's output and gradients.
cfg = ModelConfig(layers=2, width=32, heads=4, seq=16)
full = Block(cfg)
init_parameters(full, cfg, seed=5, prefix="blocks.0.")
tight = parse_codec("ebq:abs:1e-6")
tp = TensorParallel(world, tight, tight)
block = ParallelBlock.from_full(full, cfg, tp)
h = torch.randn(2, cfg.seq, cfg.width, generator=torch.Generator().manual_seed(9))
h_par, h_ref = h.clone().requires_grad_(), h.clone().requires_grad_()
out_par, out_ref = block(h_par), full(h_ref)
assert (out_par - out_ref).abs().max() < 1e-4
w = torch.randn(out_ref.shape, generator=torch.Generator().manual_seed(10))
(out_par * w).sum().backward()
(out_ref * w).sum().backward()
assert (h_par.grad - h_ref.grad).abs().max() < 1e-4
ref = shard_block({n: p.grad for n, p in full.named_parameters()}, cfg, rank, size)
for name, p in block.named_parameters():
    assert (p.grad - ref[name]).abs().max() <= 1e-3 * ref[name].abs().max() + 1e-5, name
assert tp.meters.ops["tp_fwd"].calls == 2 and tp.meters.ops["tp_bwd"].calls == 2
tp.close()

# 5. the guard measures a call that sent lossy frames, not one that went raw (auto on shared
# memory): a raw sum has no codec error to measure, and its reference would cost a second sum.
for codec, lossy in (("ebq:rms:5e-3", True), ("auto:rms:5e-3", False)):
    spec = parse_codec(codec)
    tp = TensorParallel(world, spec, spec)
    tp.guard = Guard({"tp_fwd": (lambda spec=spec: spec, None)}, every=1)
    tp.guard.begin_step(0)
    tp.allreduce(torch.randn(4096, generator=gen), "fwd")
    measured = tp.guard.samples["tp_fwd"].norm2 > 0
    assert measured == lossy, (codec, tp.guard.samples["tp_fwd"].norm2)
    tp.guard.close()
    tp.close()

world.Barrier()
if rank == 0:
    print("tp ops: passed", flush=True)
