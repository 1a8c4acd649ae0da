"""Checkpoints of the training job (``--checkpoint-dir``): written, published, checked, loaded.

    DIR/step-000012/    a published checkpoint (renamed from DIR/.tmp-step-000012 when whole)
        model/          torch.distributed.checkpoint (DCP): every run's model and optimizer,
                        sharded under --fsdp, keyed by run, pipeline stage and TP rank
        rank00003.pt    world rank 3's own state: error-feedback residuals, the guard's
                        codecs, the run's record so far, the RNG states
        COMPLETE        JSON: the step and what a resuming job must match; written last

Every rank writes into the temporary folder; after a barrier world rank 0 writes COMPLETE,
fsyncs and renames the folder, so a crash while saving leaves the previous checkpoint whole
(and a ``.tmp-`` folder that ``--resume`` ignores). The two latest checkpoints are kept.

``--resume`` takes the latest published checkpoint. World rank 0 checks it before anything is
loaded (COMPLETE present, every rank's file there, the same layout, model, data, batch and
codecs) and every rank raises the same ``CheckpointError`` if it does not fit.

Only the dp degree may change, and only where every run is uncompressed: DCP reshards the
model and optimizer, and each rank takes the rank file of its (tp, pp) place at dp rank
``dp_rank % saved dp`` (the record so far and the RNG states, alike on every dp rank). A
compressed run's error-feedback residuals belong to one rank's slice of the batch and do not
reshard, so a dp change is refused there.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
from pathlib import Path

import numpy as np
import torch
import torch.distributed.checkpoint as dcp
from mpi4py import MPI
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from pycomm.train.groups import Layout

FORMAT = 1
KEEP = 2  #: published checkpoints kept


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be written or resumed from (raised on every rank)."""


def fingerprint(args: argparse.Namespace, layout, corpus, plan: list) -> dict:
    """What a job must share with a checkpoint's to resume from it (JSON)."""
    return {
        "format": FORMAT,
        "ranks": layout.dp * layout.tp * layout.pp,
        "layout": {"dp": layout.dp, "tp": layout.tp, "pp": layout.pp, "fsdp": args.fsdp},
        "model": {k: getattr(args, k) for k in ("layers", "width", "heads", "seq")},
        "batch": {k: getattr(args, k) for k in ("batch", "micro_batches", "seed")},
        "data": corpus.describe(),
        "dp_options": {"error_feedback": args.error_feedback, "bucket_mb": args.bucket_mb},
        "runs": {name: codecs.describe() for name, codecs in plan},
    }


class Checkpoints:
    """The checkpoints of one job in ``directory``; every method is collective over the world."""

    def __init__(self, directory: str, every: int, want: dict, log=None) -> None:  # noqa: ANN001
        self.root = Path(directory)
        self.every = every
        self.want = want
        self.log = log or (lambda text: None)
        self.comm = MPI.COMM_WORLD.Dup()
        self.rank = self.comm.Get_rank()
        self.source_rank = self.rank  # whose rank file this rank resumes from

    def due(self, done: int, last: bool) -> bool:
        return last or (self.every > 0 and done % self.every == 0)

    def check(self, resume: bool) -> int:
        """The step to start from: that of the latest checkpoint with ``resume``, else 0
        (refused where the folder holds another run's checkpoints)."""
        problem, step, saved_dp = "", 0, None
        if self.rank == 0:
            problem, step, saved_dp = self._examine(resume)
        problem, step, saved_dp = self.comm.bcast((problem, step, saved_dp), root=0)
        if problem:
            raise CheckpointError(problem)
        if saved_dp is not None:
            self.source_rank = _source_rank(self.want["layout"], saved_dp, self.rank)
            if self.rank == 0:
                self.log(f"checkpoint: dp {saved_dp} -> {self.want['layout']['dp']} (resharded)")
        return step

    def save(self, done: int, runs: list) -> None:
        """Write the state after ``done`` steps of every run, then publish it."""
        tmp, final = self.root / f".tmp-step-{done:06d}", self._path(done)
        if self.rank == 0:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
        self.comm.Barrier()
        dcp.save(_dcp_state(runs), storage_writer=dcp.FileSystemWriter(tmp / "model"))
        own = {"runs": {r.record.name: r.state_dict() for r in runs}, "rng": _rng_state()}
        with open(tmp / f"rank{self.rank:05d}.pt", "wb") as f:
            torch.save(own, f)
            f.flush()
            os.fsync(f.fileno())
        self.comm.Barrier()  # every rank's part is on disk
        if self.rank == 0:
            done_text = json.dumps({**self.want, "step": done}, indent=1)
            with open(tmp / "COMPLETE", "w") as f:
                f.write(done_text)
                f.flush()
                os.fsync(f.fileno())
            _fsync_dir(tmp)
            shutil.rmtree(final, ignore_errors=True)  # only a step saved twice has one
            os.rename(tmp, final)
            _fsync_dir(self.root)
            for old in _published(self.root)[:-KEEP]:
                shutil.rmtree(old, ignore_errors=True)
            self.log(f"checkpoint: {final} (after step {done})")
        self.comm.Barrier()

    def own(self, step: int) -> dict:
        """This rank's file of the checkpoint of ``step`` (``check`` passed)."""
        path = self._path(step) / f"rank{self.source_rank:05d}.pt"
        return torch.load(path, weights_only=False)

    def load(self, step: int, runs: list, own: dict) -> None:
        """Load the checkpoint of ``step`` into every run (made with ``own``'s layouts)."""
        path = self._path(step)
        state = _dcp_state(runs)
        dcp.load(state, storage_reader=dcp.FileSystemReader(path / "model"))
        for run, saved in zip(runs, state.values(), strict=True):
            (part,) = saved.values()
            trainer = run.trainer
            set_state_dict(
                trainer.dp.module,
                trainer.optimizer,
                model_state_dict=part["model"],
                optim_state_dict=part["optim"],
            )
        for run in runs:
            run.load_state_dict(own["runs"][run.record.name])
        _set_rng_state(own["rng"])
        self.comm.Barrier()
        self.log(f"checkpoint: resumed from {path} (after step {step})")

    def close(self) -> None:
        self.comm.Free()

    def _path(self, step: int) -> Path:
        return self.root / f"step-{step:06d}"

    def _examine(self, resume: bool) -> tuple[str, int, int | None]:
        """World rank 0: what is wrong with resuming (or with starting afresh) here; the step
        to resume from, and the checkpoint's dp degree where it differs from this job's."""
        published = _published(self.root)
        if not resume:
            if published:
                return (
                    f"{self.root} holds checkpoints already: add --resume, or use another",
                    0,
                    None,
                )
            return "", 0, None
        if not published:
            return f"--resume: no checkpoint in {self.root}", 0, None
        latest = published[-1]
        try:
            saved = json.loads((latest / "COMPLETE").read_text())
        except (OSError, ValueError) as exc:
            return f"--resume: {latest} is incomplete (its COMPLETE: {exc})", 0, None
        saved_dp = _dp_change(saved, self.want)
        if saved_dp is not None and not _uncompressed(saved):
            return (
                f"--resume: {latest} was written with dp {saved_dp}, this job has dp "
                f"{self.want['layout']['dp']}: the error-feedback residuals of its compressed "
                "runs belong to one rank's slice of the batch and cannot be resharded (only "
                "uncompressed runs resume on another dp); resume with the same dp",
                0,
                None,
            )
        differ = [
            f"{k}: {json.dumps(saved.get(k))} in the checkpoint, {json.dumps(v)} in this job"
            for k, v in self.want.items()
            if saved.get(k) != v and (saved_dp is None or k not in ("ranks", "layout"))
        ]
        if differ:
            return f"--resume: {latest} does not fit this job: " + "; ".join(differ), 0, None
        parts = ["model/.metadata"] + [f"rank{r:05d}.pt" for r in range(saved["ranks"])]
        missing = [p for p in parts if not (latest / p).is_file()]
        if missing:
            return f"--resume: {latest} is incomplete: {', '.join(missing)} missing", 0, None
        return "", int(saved["step"]), saved_dp


def _dp_change(saved: dict, want: dict) -> int | None:
    """The checkpoint's dp degree if it and nothing else of the layout differs from want's."""
    a, b = saved.get("layout"), want["layout"]
    if not isinstance(a, dict) or a.get("dp") == b["dp"]:
        return None
    if any(a.get(k) != b[k] for k in b if k != "dp") or not isinstance(a["dp"], int):
        return None
    return a["dp"]


def _uncompressed(saved: dict) -> bool:
    """Whether every run of a checkpoint was uncompressed (no state beyond model and
    optimizer that belongs to one dp rank)."""
    runs = saved.get("runs")
    return isinstance(runs, dict) and all(
        all(c == "none" for c in codecs.values()) for codecs in runs.values()
    )


def _source_rank(layout: dict, saved_dp: int, rank: int) -> int:
    """The world rank of the saved layout whose rank file ``rank`` of ``layout`` resumes from:
    the same tp and pp place, dp rank modulo the saved dp."""
    now = Layout(layout["dp"], layout["tp"], layout["pp"])
    dp_rank, tp_rank, pp_rank = now.coords(rank)
    return Layout(saved_dp, now.tp, now.pp).rank(dp_rank % saved_dp, tp_rank, pp_rank)


def _dcp_state(runs: list) -> dict:
    """DCP's view of every run: its model and optimizer, under the run's name and this
    rank's place in the pipeline and TP group (a TP shard's parameters have the same names on
    every TP rank; DP replicas share a key, and DCP writes one copy)."""
    state = {}
    for run in runs:
        trainer = run.trainer
        where = f"pp{trainer.groups.pp_rank}_tp{trainer.groups.tp_rank}"
        model, optim = get_state_dict(trainer.dp.module, trainer.optimizer)
        state[run.record.name] = {where: {"model": model, "optim": optim}}
    return state


def _published(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("step-*") if p.is_dir()) if root.is_dir() else []


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rng_state() -> dict:
    return {
        "torch": torch.get_rng_state(),
        "numpy": np.random.get_state(),
        "python": random.getstate(),
    }


def _set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
