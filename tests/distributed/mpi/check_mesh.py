"""DeviceMesh, FSDP2 and DTensor tensor parallelism on mpiucc train bit for bit as on gloo.

Every training below runs twice, once on a gloo world and once on an mpiucc world, from the same
seeds. Where a reduction has two members (2 ranks, or the dp and tp dimensions of a 2 x 2 mesh)
a sum has one rounding in any order, so the parameters after training must be the same bits.
Reductions over 4 ranks sum in a different order in MPI and gloo; their trainings (``exact``)
use float64, integer inputs and parameters rounded to multiples of 1/16 after every step (a local
rounding, the same on both backends), so every gradient is a short dyadic number and every sum
of them is exact in any order.

bf16 parameters with an fp32 reduce on 4 ranks (``ExactSumCheckedReduceScatter``): each
gradient is a bf16 number (8 significant bits), and an fp32 sum of 4 of them is exact, so the
same in any order, whenever every partial sum an order can form, which is the sum of a subset of
the terms, is an fp32 number: terms within 14 binades of each other always are (multiples of
2^(e_min-8) below 2^(e_max+2): at most 24 bits). MPI and gloo order the sum differently, each by
its own algorithm for the size, so this is the property that makes their bits agree. The test
checks it on every element FSDP reduces (all 15 subset sums, exact in float64) and then asserts
the bits equal. Where a subset sum is no fp32 number, the results may differ by the rounding of
that sum, and no caller can choose MPI's or gloo's order.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from _dist import passed
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard
from torch.distributed.fsdp._fully_shard._fsdp_collectives import DefaultReduceScatter
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    RowwiseParallel,
    parallelize_module,
)

STEPS = 3


class Block(torch.nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.up = torch.nn.Linear(dim, 2 * dim)
        self.down = torch.nn.Linear(2 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.relu(self.up(x)))


class Net(torch.nn.Module):
    def __init__(self, dim: int = 16, depth: int = 2) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(dim) for _ in range(depth))
        self.head = torch.nn.Linear(dim, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def make_net(exact: bool) -> Net:
    torch.manual_seed(0)
    net = Net()
    if exact:
        net = net.double()
        with torch.no_grad():
            for p in net.parameters():
                p.copy_(torch.randint(-4, 5, p.shape, dtype=torch.float64) / 16)
    return net


@torch.no_grad()
def round_to_grid(net: torch.nn.Module) -> None:
    """Each rank's parameters (its shards) to multiples of 1/16."""
    for p in net.parameters():
        local = p.to_local() if isinstance(p, DTensor) else p
        local.copy_(torch.round(local * 16) / 16)


def batch(step: int, dp_rank: int, exact: bool) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 * dp_rank + step)
    if exact:
        x = torch.randint(-2, 3, (4, 16), generator=g).double()
        return x, torch.randint(-2, 3, (4, 4), generator=g).double()
    return torch.randn(4, 16, generator=g), torch.randn(4, 4, generator=g)


def train(net: torch.nn.Module, dp_rank: int, exact: bool) -> list[torch.Tensor]:
    """STEPS of SGD; the full parameters (DTensors gathered) and the losses, as float64."""
    before = full_parameters(net)
    lr = 2.0**-6 if exact else 0.05
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    losses = []
    for step in range(STEPS):
        x, y = batch(step, dp_rank, exact)
        out = net(x)
        out = out.full_tensor() if isinstance(out, DTensor) else out
        # exact: a linear loss keeps the gradients dyadic; else the usual squared error
        loss = (out * y).sum() if exact else torch.nn.functional.mse_loss(out, y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        if exact:
            round_to_grid(net)
        losses.append(loss.detach().double().reshape(1))
    after = full_parameters(net)
    assert not all(torch.equal(a, b) for a, b in zip(after, before, strict=True)), "no update"
    return losses + after


def full_parameters(net: torch.nn.Module) -> list[torch.Tensor]:
    params = [p.full_tensor() if isinstance(p, DTensor) else p for p in net.parameters()]
    return [p.detach().double().reshape(-1).clone() for p in params]


def fsdp(mesh: DeviceMesh, net: Net, **kw) -> Net:
    for block in net.blocks:
        fully_shard(block, mesh=mesh, **kw)
    return fully_shard(net, mesh=mesh, **kw)


def tensor_parallel(mesh: DeviceMesh, net: Net) -> Net:
    plan = {}
    for i in range(len(net.blocks)):
        plan[f"blocks.{i}.up"] = ColwiseParallel()
        plan[f"blocks.{i}.down"] = RowwiseParallel()
    return parallelize_module(net, mesh, plan)


BF16_FP32 = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)


class ExactSumCheckedReduceScatter(DefaultReduceScatter):
    """FSDP's reduce-scatter, after checking that its fp32 sum is exact in any order: every
    rank's input gathered (no arithmetic), and every subset sum of each element's terms, exact
    in float64, an fp32 number."""

    elements = 0  #: elements checked

    def __call__(self, output_tensor, input_tensor, group, op, async_op=False):  # noqa: ANN001
        terms = torch.empty(group.size() * input_tensor.numel(), dtype=input_tensor.dtype)
        dist.all_gather_into_tensor(terms, input_tensor, group=group)
        terms = terms.view(group.size(), -1)
        assert torch.equal(terms, terms.bfloat16().to(terms.dtype)), "terms are not bf16 values"
        exponent, nonzero = torch.frexp(terms).exponent, terms != 0
        top = torch.where(nonzero, exponent, -(1 << 20)).amax(0)
        bottom = torch.where(nonzero, exponent, 1 << 20).amin(0)
        assert bool((top - bottom < 44).all()), "terms too far apart to check in float64"
        wide = terms.double()  # float64 holds any subset sum of bf16 terms < 44 binades apart
        for subset in range(1, 1 << group.size()):
            rows = [r for r in range(group.size()) if subset >> r & 1]
            total = wide[rows].sum(0)
            assert torch.equal(total.float().double(), total), "an fp32 partial sum rounds"
        ExactSumCheckedReduceScatter.elements += terms.shape[1]
        return super().__call__(output_tensor, input_tensor, group, op, async_op)


def sums_checked(net: torch.nn.Module) -> torch.nn.Module:
    for m in net.modules():
        if isinstance(m, FSDPModule):
            m.set_custom_reduce_scatter(ExactSumCheckedReduceScatter())
    return net


def run_all(backend: str) -> dict[str, list[torch.Tensor]]:
    dist.init_process_group(backend, init_method="mpi://")
    rank, size = dist.get_rank(), dist.get_world_size()
    exact = size > 2  # sums over 4 ranks are compared on exact data
    runs: dict[str, list[torch.Tensor]] = {}
    dp = init_device_mesh("cpu", (size,), mesh_dim_names=("dp",))
    assert dist.get_backend(dp.get_group()) == backend
    for reshard in (True, False):
        net = fsdp(dp, make_net(exact), reshard_after_forward=reshard)
        runs[f"fsdp reshard={reshard}"] = train(net, rank, exact)
    net = fsdp(dp, make_net(False), mp_policy=BF16_FP32)
    if size > 2:  # an fp32 sum of more than 2 terms is exact, so order-free, if they are close
        net = sums_checked(net)
    runs["fsdp bf16 params, fp32 reduce"] = train(net, rank, False)
    tp = init_device_mesh("cpu", (size,), mesh_dim_names=("tp",))
    runs["tp colwise/rowwise"] = train(tensor_parallel(tp, make_net(exact)), 0, exact)
    if size == 4:
        mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        dp_rank = mesh.get_local_rank("dp")
        assert mesh["dp"].size() == 2 and mesh["tp"].size() == 2
        for name, kw in (("", {}), (", bf16 params", {"mp_policy": BF16_FP32})):
            net = fsdp(mesh["dp"], tensor_parallel(mesh["tp"], make_net(False)), **kw)
            runs[f"2-D dp x tp{name}"] = train(net, dp_rank, False)
        check_groups(mesh)
    dist.destroy_process_group()
    return runs


def check_groups(mesh: DeviceMesh) -> None:
    """Named groups: found by name, destroyed one by one, and the world goes on."""
    group = mesh.get_group("tp")
    name = group.group_name
    assert dist.distributed_c10d._resolve_process_group(name) is group
    assert dist.distributed_c10d._get_process_group_name(group) == name
    extra = dist.new_group([0, 1], group_desc="extra")
    if dist.get_rank() in (0, 1):
        assert extra.group_desc == "extra"
        t = torch.ones(2)
        dist.all_reduce(t, group=extra)
        assert torch.equal(t, torch.full((2,), 2.0))
    dist.destroy_process_group(extra)
    t = torch.ones(1)
    dist.all_reduce(t)
    assert t.item() == dist.get_world_size()


gloo = run_all("gloo")
ours = run_all("mpiucc")
assert gloo.keys() == ours.keys()
for what in ours:
    for i, (a, b) in enumerate(zip(ours[what], gloo[what], strict=True)):
        assert torch.equal(a, b), f"{what}, tensor {i}: {(a - b).abs().max().item()} from gloo"
dist.init_process_group("mpiucc", init_method="mpi://")
if dist.get_world_size() > 2 and dist.get_rank() == 0:
    checked = ExactSumCheckedReduceScatter.elements
    print(f"bf16 gradients: {checked} reduced elements, every fp32 partial sum exact", flush=True)
passed(f"mesh ({', '.join(ours)})")
