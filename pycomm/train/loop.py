"""Training runs: build the parallel model, step through the batches, evaluate, record.

Each rank records, per step, its wall time and how the training thread spent it (codec,
communication, pipeline wait; the rest is computation), and per operator the totals of
``meters``. ``report`` merges the ranks' records. A baseline and a compressed run advance in
lockstep (``train_runs``), so both see the same machine load.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from mpi4py import MPI

from pycomm.train.checkpoint import Checkpoints
from pycomm.train.config import Codecs
from pycomm.train.data import Corpus, train_batch, validation_batches
from pycomm.train.data_parallel import DataParallel
from pycomm.train.groups import ParallelGroups
from pycomm.train.guard import Guard
from pycomm.train.meters import OPERATORS, Meters, OpMeter
from pycomm.train.model import ModelConfig
from pycomm.train.pipe_link import PipeLink
from pycomm.train.pipeline import PipelineRunner
from pycomm.train.replicas import ReplicaCheck
from pycomm.train.sharded import ShardedDataParallel
from pycomm.train.stage import PipelineStage
from pycomm.train.tensor_parallel import TensorParallel, is_tp_sharded

#: Steps left out of the time totals (first-touch allocation, DDP's bucket rebuild).
WARMUP_STEPS_UNTIMED = 1


@dataclass
class RankRecord:
    """What one rank saw during one run (merged over ranks by ``report``)."""

    name: str
    codecs: dict[str, str]
    step_s: list[float] = field(default_factory=list)  #: wall time of each step
    split: list[dict[str, float]] = field(default_factory=list)  #: per step: codec, comm, ...
    train_loss: list[float] = field(default_factory=list)  #: per step (every rank has it)
    val: list[tuple[int, float, float]] = field(default_factory=list)  #: (step, loss, train s)
    ops: dict[str, dict] = field(default_factory=dict)  #: OpMeter fields, timed steps only
    replica_checks: int = 0  #: replica checks passed
    guard: dict[str, dict] = field(default_factory=dict)  #: per stream, Guard.summary()
    guard_events: list[str] = field(default_factory=list)  #: streams tightened
    guard_errors: list[tuple[int, dict[str, float]]] = field(default_factory=list)


def model_config(args: argparse.Namespace) -> ModelConfig:
    return ModelConfig(layers=args.layers, width=args.width, heads=args.heads, seq=args.seq)


def log(text: str) -> None:
    """A line from world rank 0 (every rank takes the same decisions)."""
    if MPI.COMM_WORLD.Get_rank() == 0:
        print(text, flush=True)


def learning_rate(args: argparse.Namespace, step: int) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, progress))))


def micro_batches(
    tokens: torch.Tensor, targets: torch.Tensor, groups: ParallelGroups, count: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """This DP rank's slice of a global batch, cut into ``count`` micro-batches."""
    dp = groups.layout.dp
    per_rank = tokens.shape[0] // dp
    lo = groups.dp_rank * per_rank
    mine_x, mine_y = tokens[lo : lo + per_rank], targets[lo : lo + per_rank]
    return list(zip(mine_x.chunk(count), mine_y.chunk(count), strict=True))


class Trainer:
    """The parallel model of one run and its optimizer."""

    def __init__(
        self,
        args: argparse.Namespace,
        groups: ParallelGroups,
        codecs: Codecs,
        buckets: list[list[int]] | None = None,
    ) -> None:
        self.args, self.groups, self.codecs = args, groups, codecs
        self.cfg = model_config(args)
        self.meters = Meters()
        self.tp = TensorParallel(groups.comm("tp"), codecs.tp_fwd, codecs.tp_bwd, self.meters)
        self.stage = PipelineStage(self.cfg, groups.pp_rank, groups.layout.pp, self.tp, args.seed)
        self.link = (
            PipeLink(groups.comm("pp"), codecs.pp, self.meters) if groups.layout.pp > 1 else None
        )
        replicated = [n for n, _ in self.stage.named_parameters() if not is_tp_sharded(n)]
        replicated = replicated if groups.layout.tp > 1 else []
        self.dp: DataParallel | ShardedDataParallel
        if args.fsdp:
            self.dp = ShardedDataParallel(
                self.stage,
                groups.layout,
                codecs.dp,
                codecs.weights,
                self.meters,
                args.error_feedback,
                replicated,
                groups.comm("tp"),
            )
        else:
            self.dp = DataParallel(
                self.stage,
                groups.dp,
                codecs.dp,
                self.meters,
                args.bucket_mb,
                args.error_feedback,
                replicated=replicated,
                tp_comm=groups.comm("tp"),
                buckets=buckets,
            )
        self.runner = PipelineRunner(self.stage, self.dp, self.link, groups, self.cfg)
        self.optimizer = torch.optim.AdamW(
            self.stage.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0
        )
        self.world = MPI.COMM_WORLD.Dup()
        gathered = self.dp.gathered if args.fsdp else None
        self.replicas = ReplicaCheck(self.stage, groups, gathered)
        self.guard = Guard(self._streams(), args.guard_every, log)
        for part in (self.tp, self.link, self.dp):
            if part is not None:
                part.guard = self.guard
        # The batch loss lives on the last stage; its first TP rank of each DP replica reports.
        self.reports_loss = self.stage.is_last and groups.tp_rank == 0
        self.drill_step = _drill_step()

    def step(self, step: int, corpus: Corpus) -> float | None:
        """One optimizer step; the stage's share of the batch loss (last stage) or None."""
        for g in self.optimizer.param_groups:
            g["lr"] = learning_rate(self.args, step)
        tokens, targets = train_batch(corpus, step, self.args.batch, self.args.seq, self.args.seed)
        self.optimizer.zero_grad(set_to_none=True)
        self.guard.begin_step(step)
        self.dp.set_sampling(self.guard.sampling)
        loss = self.runner.run(
            micro_batches(tokens, targets, self.groups, self.args.micro_batches),
            train=True,
            mid_step=_die if step == self.drill_step else None,
        )
        self.guard.end_step(step)
        self.optimizer.step()
        every = self.args.check_replicas
        if every and (step == 0 or (step + 1) % every == 0 or step == self.args.steps - 1):
            self.replicas(step + 1)
        return loss

    def _streams(self) -> dict:
        """The compressible streams of this layout: name -> (get, set) of its CodecSpec."""
        tp, link, dp = self.tp, self.link, self.dp
        streams = {}
        if tp.size > 1:
            streams["tp_fwd"] = (lambda: tp.fwd, lambda s: setattr(tp, "fwd", s))
            streams["tp_bwd"] = (lambda: tp.bwd, lambda s: setattr(tp, "bwd", s))
        if link is not None:
            streams["pp"] = (lambda: link.spec, lambda s: setattr(link, "spec", s))
        if dp.size > 1 and isinstance(dp, ShardedDataParallel):
            streams["fsdp_rs"] = (lambda: dp.spec, lambda s: setattr(dp, "spec", s))
            streams["fsdp_ag"] = (lambda: dp.weight_spec, lambda s: setattr(dp, "weight_spec", s))
        elif dp.size > 1:
            streams["dp"] = (lambda: dp.spec, lambda s: setattr(dp, "spec", s))
        return streams

    def evaluate(self, batches: list) -> float:
        """Mean validation loss over ``batches`` (every rank gets it)."""
        self.meters.recording = False
        try:
            total = 0.0
            for tokens, targets in batches:
                mbs = micro_batches(tokens, targets, self.groups, self.args.micro_batches)
                loss = self.runner.run(mbs, train=False)
                total += loss if self.reports_loss else 0.0
            return self._mean_over_replicas(total) / len(batches)
        finally:
            self.meters.recording = True

    def _mean_over_replicas(self, value: float) -> float:
        v = np.array([value if self.reports_loss else 0.0])
        self.world.Allreduce(MPI.IN_PLACE, v, op=MPI.SUM)
        return float(v[0]) / self.groups.layout.dp

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
        self.tp.close()
        self.dp.close()
        self.guard.close()
        self.replicas.close()
        self.world.Free()


class Run:
    """One configuration's trainer and this rank's record of it, advanced a step at a time."""

    def __init__(
        self,
        args: argparse.Namespace,
        groups: ParallelGroups,
        codecs: Codecs,
        name: str,
        saved: dict | None = None,
    ) -> None:
        """``saved``: this run's part of a rank file to resume from (``checkpoint``)."""
        torch.manual_seed(args.seed)
        self.args = args
        buckets = (saved or {}).get("dp", {}).get("buckets")  # DDP's layout when saved
        self.trainer = Trainer(args, groups, codecs, buckets)
        self.record = RankRecord(name, codecs.describe())
        self.totals = {k: OpMeter() for k in OPERATORS}
        self.train_s = 0.0
        self._pending: tuple | None = None  # the last step's loss, reduced in the background

    def step(self, step: int, corpus: Corpus) -> None:
        trainer, record = self.trainer, self.record
        before = trainer.meters.snapshot()
        t0 = time.perf_counter()
        loss = trainer.step(step, corpus)
        elapsed = time.perf_counter() - t0
        self.train_s += elapsed
        delta = trainer.meters.delta(before)
        record.step_s.append(elapsed)
        record.split.append(_split(elapsed, delta))
        if step >= WARMUP_STEPS_UNTIMED:
            for k in OPERATORS:
                self.totals[k].add(delta[k])
        self._collect_loss()
        v = np.array([loss / trainer.groups.layout.dp if trainer.reports_loss else 0.0])
        self._pending = v, trainer.world.Iallreduce(MPI.IN_PLACE, v, op=MPI.SUM)

    def state_dict(self) -> dict:
        """This rank's state of the run beyond the model and optimizer (``checkpoint``): the
        error feedback, the guard's codecs and history, the record so far."""
        self._collect_loss()
        trainer = self.trainer
        return {
            "dp": trainer.dp.state_dict(),
            "guard": trainer.guard.state_dict(),
            "record": self.record,
            "totals": self.totals,
            "train_s": self.train_s,
            "replica_checks": trainer.replicas.checks,
        }

    def load_state_dict(self, state: dict) -> None:
        trainer = self.trainer
        trainer.dp.load_state_dict(state["dp"])
        trainer.guard.load_state_dict(state["guard"])
        self.record, self.totals, self.train_s = state["record"], state["totals"], state["train_s"]
        trainer.replicas.checks = state["replica_checks"]

    def evaluate(self, step: int, batches: list) -> None:
        self._collect_loss()
        self.record.val.append((step + 1, self.trainer.evaluate(batches), self.train_s))

    def finish(self) -> RankRecord:
        self._collect_loss()
        self.trainer.close()
        self.record.ops = {k: asdict(v) for k, v in self.totals.items()}
        self.record.replica_checks = self.trainer.replicas.checks
        guard = self.trainer.guard
        self.record.guard = guard.summary()
        self.record.guard_events = guard.events
        self.record.guard_errors = guard.history
        return self.record

    def _collect_loss(self) -> None:
        if self._pending is not None:
            v, req = self._pending
            req.Wait()
            self.record.train_loss.append(float(v[0]))
            self._pending = None


def train_runs(
    args: argparse.Namespace,
    groups: ParallelGroups,
    corpus: Corpus,
    plan: list[tuple[str, Codecs]],
    progress=None,
    checkpoints: Checkpoints | None = None,
    start: int = 0,
) -> list[RankRecord]:
    """Train every (name, codecs) of ``plan`` from the same weights, in lockstep, from step
    ``start`` (the checkpoint of that step loaded) to ``--steps`` or ``--stop-after``.

    Step k of every run comes before step k + 1 of any, so that a machine whose load changes
    over minutes slows every run alike and their times stay comparable.
    """
    own = checkpoints.own(start) if start else {"runs": {}}
    runs = [Run(args, groups, codecs, name, own["runs"].get(name)) for name, codecs in plan]
    val = validation_batches(corpus, args.val_batches, args.batch, args.seq)
    end = min(args.steps, args.stop_after or args.steps)
    try:
        if start:
            checkpoints.load(start, runs, own)
        for step in range(start, end):
            for run in runs:
                run.step(step, corpus)
            if (step + 1) % args.eval_every == 0 or step == args.steps - 1:
                for run in runs:
                    run.evaluate(step, val)
            if progress is not None:
                progress.update([r.record for r in runs], step)
            if checkpoints is not None and checkpoints.due(step + 1, step + 1 == end):
                checkpoints.save(step + 1, runs)
    finally:
        records = [run.finish() for run in runs]
    return records


def _drill_step() -> int | None:
    """``MPIUCC_FAULT_DRILL=RANK:STEP``: the step (from 0) in which this world rank kills
    itself, or None (the fault drill, tests/train)."""
    rank, _, step = os.environ.get("MPIUCC_FAULT_DRILL", "").partition(":")
    return int(step) if rank and int(rank) == MPI.COMM_WORLD.Get_rank() else None


def _die() -> None:
    """SIGKILL this process, as a node failure would, between a step's forward and backward."""
    rank = MPI.COMM_WORLD.Get_rank()
    print(
        f"fault drill: world rank {rank} killed at {time.time():.3f}", file=sys.stderr, flush=True
    )
    os.kill(os.getpid(), signal.SIGKILL)


def _split(elapsed: float, delta: dict[str, OpMeter]) -> dict[str, float]:
    codec = sum(m.codec_s for m in delta.values())
    comm = {k: m.comm_s for k, m in delta.items()}
    wait = delta["pp"].wait_s
    out = {"codec": codec, "wait": wait, **{f"comm_{k}": v for k, v in comm.items()}}
    out["compute"] = max(0.0, elapsed - codec - wait - sum(comm.values()))
    return out
