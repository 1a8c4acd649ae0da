"""The data × tensor × pipeline layout of the ranks, and its process groups on "mpiucc".

Ranks are laid out Megatron's way: the TP rank varies fastest (a TP group is consecutive ranks,
the ones that talk most, on one node), then the DP rank, then the pipeline stage::

    rank = (pp_rank * dp + dp_rank) * tp + tp_rank
"""

from __future__ import annotations

from dataclasses import dataclass

import torch.distributed as dist
from mpi4py import MPI


@dataclass(frozen=True)
class Layout:
    dp: int
    tp: int
    pp: int

    def __post_init__(self) -> None:
        for name in ("dp", "tp", "pp"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be at least 1")

    @property
    def world(self) -> int:
        return self.dp * self.tp * self.pp

    def rank(self, dp_rank: int, tp_rank: int, pp_rank: int) -> int:
        return (pp_rank * self.dp + dp_rank) * self.tp + tp_rank

    def coords(self, rank: int) -> tuple[int, int, int]:
        """(dp_rank, tp_rank, pp_rank) of a world rank."""
        return (rank // self.tp) % self.dp, rank % self.tp, rank // (self.tp * self.dp)

    def tp_groups(self) -> list[list[int]]:
        return [
            [self.rank(d, t, p) for t in range(self.tp)]
            for p in range(self.pp)
            for d in range(self.dp)
        ]

    def dp_groups(self) -> list[list[int]]:
        return [
            [self.rank(d, t, p) for d in range(self.dp)]
            for p in range(self.pp)
            for t in range(self.tp)
        ]

    def pp_groups(self) -> list[list[int]]:
        return [
            [self.rank(d, t, p) for p in range(self.pp)]
            for d in range(self.dp)
            for t in range(self.tp)
        ]


def resolve_layout(world: int, dp: int | None, tp: int, pp: int) -> Layout:
    """The layout for ``world`` ranks; ``dp`` defaults to what tp and pp leave."""
    if tp < 1 or pp < 1 or (dp is not None and dp < 1):
        raise ValueError("--dp, --tp and --pp must be at least 1")
    if dp is None:
        if world % (tp * pp):
            raise ValueError(
                f"{world} ranks cannot be split into --tp {tp} x --pp {pp} (x data parallel): "
                f"launch a multiple of {tp * pp} ranks"
            )
        dp = world // (tp * pp)
    if dp * tp * pp != world:
        raise ValueError(
            f"--dp {dp} x --tp {tp} x --pp {pp} = {dp * tp * pp} ranks, but this job has {world} "
            f"(mpiexec -n {dp * tp * pp}, or change the factors)"
        )
    return Layout(dp, tp, pp)


@dataclass
class ParallelGroups:
    """This rank's coordinates and its three process groups (and their MPI communicators)."""

    layout: Layout
    rank: int
    dp_rank: int
    tp_rank: int
    pp_rank: int
    dp: dist.ProcessGroup
    tp: dist.ProcessGroup
    pp: dist.ProcessGroup

    @property
    def pp_ranks(self) -> list[int]:
        """World ranks of this rank's pipeline, stage by stage."""
        return [self.layout.rank(self.dp_rank, self.tp_rank, p) for p in range(self.layout.pp)]

    def comm(self, which: str) -> MPI.Intracomm:
        """The MPI communicator of the "dp", "tp" or "pp" group (the mpiucc group's own)."""
        return getattr(self, which).comm


def build_groups(layout: Layout) -> ParallelGroups:
    """Create every TP, DP and PP group with the mpiucc backend (a collective over the world).

    Every rank takes part in creating every group, in the same order, as torch requires.
    """
    rank = dist.get_rank()
    mine = {}
    for which, lists in (
        ("tp", layout.tp_groups()),
        ("dp", layout.dp_groups()),
        ("pp", layout.pp_groups()),
    ):
        mine[which], _ = dist.new_subgroups_by_enumeration(lists, backend="mpiucc")
    dp_rank, tp_rank, pp_rank = layout.coords(rank)
    return ParallelGroups(layout, rank, dp_rank, tp_rank, pp_rank, **mine)


def new_dp_group(layout: Layout) -> dist.ProcessGroup:
    """A fresh mpiucc DP group for this rank (a collective over the world), for a run that
    sets a compression policy on it (two runs in lockstep must not share one)."""
    group, _ = dist.new_subgroups_by_enumeration(layout.dp_groups(), backend="mpiucc")
    return group
