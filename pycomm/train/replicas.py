"""The replica invariant: every copy of a parameter holds the same bits on every rank.

A TP-sharded parameter (``tensor_parallel.is_tp_sharded``) has one shard per TP rank, each
copied on the DP replicas; every other parameter (LayerNorms, row-parallel biases, embeddings,
the head) is replicated on every DP and TP rank of its stage. ``ReplicaCheck`` hashes each
parameter (BLAKE2b, 62 bits) and compares the hashes in one small allreduce (MAX) over the
stage's DP x TP ranks: per parameter, one slot per TP rank holding (h, -h) from that TP rank's
DP replicas (their max and min must agree: the DP invariant), and for a replicated parameter
one more slot from every rank of the stage (the TP invariant). Every rank reads the same
reduced vector, so every rank raises the same ``ReplicaMismatch``, naming the parameter.

Under FSDP (``--fsdp``) the DP ranks hold different shards, which have no copies to compare;
what must be the same bits on every DP rank is the weights each of them computes with. The
check then hashes the parameters gathered as forward gathers them (``gathered``: through the
weight codec), so a codec or a collective that left two ranks with different bits is caught.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable

import numpy as np
import torch
from mpi4py import MPI
from torch import nn

from pycomm.train.groups import ParallelGroups
from pycomm.train.tensor_parallel import is_tp_sharded

_EMPTY = np.iinfo(np.int64).min  #: a slot this rank does not fill (loses every MAX)


class ReplicaMismatch(RuntimeError):
    """Copies of a parameter that must be bitwise identical are not."""


def parameter_hash(p: torch.Tensor) -> int:
    """A 62-bit hash of the tensor's bytes (non-negative, so its negation fits in int64)."""
    data = p.detach().clone().numpy()  # a copy: FSDP frees a gathered parameter's storage,
    # which torch refuses once numpy has a view of it
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little") >> 2


class ReplicaCheck:
    """Checks the stage's parameters across their replicas; ``__call__`` raises on a mismatch.

    Collective over the world at construction (it splits the stage's communicator), and over
    the stage's DP x TP ranks at every call.
    """

    def __init__(
        self,
        stage: nn.Module,
        groups: ParallelGroups,
        gathered: Callable[[], contextlib.AbstractContextManager] | None = None,
    ) -> None:
        self.stage = stage
        self.gathered = gathered or contextlib.nullcontext
        self.names = [name for name, _ in stage.named_parameters()]
        self.sharded = [is_tp_sharded(name) for name in self.names]
        self.tp, self.tp_rank, self.pp_rank = groups.layout.tp, groups.tp_rank, groups.pp_rank
        self.comm = MPI.COMM_WORLD.Split(groups.pp_rank, groups.rank)
        self.checks = 0

    def __call__(self, step: int) -> None:
        v = np.full((len(self.names), self.tp + 1, 2), _EMPTY, np.int64)
        with self.gathered():
            params = list(self.stage.named_parameters())
            assert [name for name, _ in params] == self.names, "the parameters changed"
            for i, (_, p) in enumerate(params):
                h = parameter_hash(p)
                v[i, self.tp_rank] = (h, -h)
                if not self.sharded[i]:
                    v[i, self.tp] = (h, -h)
        self.comm.Allreduce(MPI.IN_PLACE, v, op=MPI.MAX)
        filled = v[..., 0] != _EMPTY
        differ = filled & (v[..., 0] != -v[..., 1])
        bad = np.flatnonzero(differ.any(axis=1))
        if bad.size:
            raise ReplicaMismatch(self._explain(step, differ, bad))
        self.checks += 1

    def _explain(self, step: int, differ: np.ndarray, bad: np.ndarray) -> str:
        lines = []
        for i in bad[:8]:
            name = self.names[i]
            tp_ranks = [t for t in range(self.tp) if differ[i, t]]
            if tp_ranks:
                where = f"its DP replicas differ (on TP rank(s) {tp_ranks})"
            else:
                where = "its copies on the TP ranks differ (a TP-replicated parameter)"
            lines.append(f"  {name!r}: {where}")
        more = f"\n  ... and {bad.size - 8} more" if bad.size > 8 else ""
        return (
            f"replica check after step {step} (pipeline stage {self.pp_rank}): "
            f"{bad.size} parameter(s) not bitwise identical across their replicas:\n"
            + "\n".join(lines)
            + more
        )

    def close(self) -> None:
        self.comm.Free()
