"""new_group: subsets made by their members alone; mpiucc subgroups of a gloo world too."""

from __future__ import annotations

import torch
import torch.distributed as dist
from _dist import init, passed

RANK, SIZE, GLOO = init()
assert SIZE >= 3


def check_subset(ranks: list[int], group: dist.ProcessGroup, reference: dist.ProcessGroup) -> None:
    if RANK not in ranks:
        assert group == dist.GroupMember.NON_GROUP_MEMBER
        return
    assert dist.get_process_group_ranks(group) == ranks
    assert dist.get_rank(group) == ranks.index(RANK)
    x = torch.arange(6.0) * (RANK + 1)
    y = x.clone()
    dist.all_reduce(x, group=group)
    dist.all_reduce(y, group=reference)
    assert torch.equal(x, y) and torch.equal(x, torch.arange(6.0) * sum(r + 1 for r in ranks))
    b = torch.full((3,), float(RANK))
    dist.broadcast(b, src=ranks[-1], group=group)
    assert torch.all(b == ranks[-1])
    outs = [torch.empty(2) for _ in ranks]
    dist.all_gather(outs, torch.full((2,), float(RANK)), group=group)
    assert [o[0].item() for o in outs] == [float(r) for r in ranks]
    out = torch.empty(2)
    dist.reduce_scatter_tensor(out, torch.ones(2 * len(ranks)), group=group)
    assert torch.all(out == len(ranks))
    # Point-to-point inside the subgroup, addressed by global rank.
    first, last = ranks[0], ranks[-1]
    if RANK == first:
        dist.send(torch.tensor([7.0]), dst=last, group=group)
    elif RANK == last:
        t = torch.empty(1)
        dist.recv(t, src=first, group=group)
        assert t.item() == 7.0
    dist.barrier(group=group)


pairs = [[0, 2], [1, SIZE - 1], list(range(SIZE))]
for ranks in pairs:
    sub = dist.new_group(ranks)
    ref = dist.new_group(ranks, backend="gloo")
    assert RANK not in ranks or dist.get_backend(sub) == "mpiucc"
    check_subset(ranks, sub, ref)
# Many small groups one after another (as tensor/pipeline parallel set-ups make them).
groups = [dist.new_group([r, (r + 1) % SIZE]) for r in range(SIZE)]
for r, g in enumerate(groups):
    if RANK in (r, (r + 1) % SIZE):
        t = torch.ones(1)
        dist.all_reduce(t, group=g)
        assert t.item() == 2.0
passed("subgroups")

# A gloo world from the same MPI-served store, with an mpiucc subgroup.
dist.init_process_group("gloo", init_method="mpi://")
sub = dist.new_group([0, 2], backend="mpiucc")
if RANK in (0, 2):
    t = torch.full((2,), float(RANK))
    dist.all_reduce(t, group=sub)
    assert torch.all(t == 2.0)
t = torch.ones(1)
dist.all_reduce(t)
assert t.item() == SIZE
passed("mpiucc subgroup of a gloo world")
