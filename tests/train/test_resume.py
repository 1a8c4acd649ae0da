"""Checkpoints: a stopped and resumed run is the straight run, bit for bit; refusals; the drill.

Each layout trains N steps straight (a checkpoint at the end), then N/2 steps with
``--stop-after`` and the rest with ``--resume``: the final checkpoints (every run's model and
optimizer) must hold the same bits and the runs the same losses. The guard is made to tighten
the DP codec after the first step (``--dp-codec ebq:rms:1e-2`` is over its 0.1%), so its state
matters too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mpi_launch import MPIEXEC

torch = pytest.importorskip("torch")
pytest.importorskip("mpi4py")

from torch.distributed.checkpoint.format_utils import dcp_to_torch_save  # noqa: E402

from pycomm.train.checkpoint import Checkpoints  # noqa: E402

SMALL = ["--layers", "2", "--width", "32", "--heads", "4", "--seq", "16", "--batch", "8"]
SMALL += ["--micro-batches", "2", "--eval-every", "3", "--val-batches", "1"]
SMALL += ["--data-limit-mb", "0.5", "--no-progress"]
#: (name, ranks, steps, options): DDP x TP with a baseline and a compressed run (DDP's
#: buckets, the TP-replicated bucket and the guard hold state); FSDP x PP compressed (the
#: reduce-scatters' residuals, the pipeline's codec).
LAYOUTS = {
    "ddp-tp": (
        4,
        6,
        [
            "--tp",
            "2",
            "--baseline",
            "--compress",
            "--dp-codec",
            "ebq:rms:1e-2",
            "--bucket-mb",
            "0.01",
        ],
    ),
    "fsdp-pp": (4, 4, ["--fsdp", "--pp", "2", "--compress", "--guard-every", "2"]),
}


def train(
    ranks: int, args: list[str], env: dict | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    if not MPIEXEC.exists():
        pytest.skip(f"no mpiexec beside {sys.executable}")
    cmd = [str(MPIEXEC), "-n", str(ranks), sys.executable, "-m", "pycomm.train", *SMALL, *args]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **(env or {}))
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hung (> {timeout} s): {cmd}\n{exc.stdout}\n{exc.stderr}")


def train_ok(ranks: int, args: list[str]) -> None:
    proc = train(ranks, args)
    assert proc.returncode == 0, f"{args}\n{proc.stdout}\n{proc.stderr}"


def checkpoint_tensors(path: Path) -> dict:
    """Every entry of a checkpoint's DCP part (all runs' models and optimizers), flattened."""
    dcp_to_torch_save(path / "model", path.parent / f"{path.name}.pt")
    out: dict = {}

    def walk(x: object, key: str) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{key}/{k}")
        elif isinstance(x, list | tuple):
            for i, v in enumerate(x):
                walk(v, f"{key}/{i}")
        else:
            out[key] = x

    walk(torch.load(path.parent / f"{path.name}.pt", weights_only=False), "")
    return out


def assert_same_run(straight: Path, resumed: Path, steps: int) -> None:
    """The same bits in every model and optimizer tensor, the same losses at every step."""
    a = checkpoint_tensors(straight / "ck" / f"step-{steps:06d}")
    b = checkpoint_tensors(resumed / "ck" / f"step-{steps:06d}")
    assert a.keys() == b.keys()
    assert len(a) > 100, len(a)
    differ = [
        k for k in a if not (torch.equal(a[k], b[k]) if torch.is_tensor(a[k]) else a[k] == b[k])
    ]
    assert not differ, f"{len(differ)} of {len(a)} entries differ, e.g. {differ[:5]}"
    ma = json.loads((straight / "out" / "metrics.json").read_text())["runs"]
    mb = json.loads((resumed / "out" / "metrics.json").read_text())["runs"]
    for ra, rb in zip(ma, mb, strict=True):
        assert len(ra["train_loss"]) == steps, ra["train_loss"]
        assert ra["train_loss"] == rb["train_loss"], (
            ra["name"],
            ra["train_loss"],
            rb["train_loss"],
        )
        assert [v[:2] for v in ra["val"]] == [v[:2] for v in rb["val"]], ra["name"]
        assert ra["guard_events"] == rb["guard_events"], ra["name"]


def paths(base: Path) -> list[str]:
    return ["--checkpoint-dir", str(base / "ck"), "--out", str(base / "out")]


@pytest.fixture(scope="module")
def straight(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each layout's uninterrupted run, trained once for the tests of this file."""
    return {}


def straight_run(straight: dict, name: str, tmp: Path) -> Path:
    if name not in straight:
        ranks, steps, args = LAYOUTS[name]
        base = tmp / f"straight-{name}"
        train_ok(ranks, ["--steps", str(steps), *args, *paths(base)])
        straight[name] = base
    return straight[name]


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_stop_and_resume_equals_the_straight_run(
    straight: dict, tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    ranks, steps, args = LAYOUTS[name]
    base = straight_run(straight, name, tmp_path_factory.getbasetemp())
    resumed = tmp_path_factory.mktemp(f"resumed-{name}")
    train_ok(
        ranks, ["--steps", str(steps), "--stop-after", str(steps // 2), *args, *paths(resumed)]
    )
    assert (resumed / "ck" / f"step-{steps // 2:06d}" / "COMPLETE").is_file()
    train_ok(ranks, ["--steps", str(steps), "--resume", *args, *paths(resumed)])
    if name == "ddp-tp":  # the guard tightened the DP codec before the checkpoint
        events = json.loads((base / "out" / "metrics.json").read_text())["runs"][1]
        assert events["guard_events"] and "after step 1," in events["guard_events"][0], events
    assert_same_run(base, resumed, steps)


def test_fault_drill_ends_the_job_and_resume_continues_exactly(
    straight: dict, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """World rank 1 SIGKILLs itself between the forwards and backwards of step 4 (index 3):
    the job ends (MPICH's launcher kills the other ranks, stuck in that step's collectives)
    with a non-zero status within 20 s of the kill, leaving the checkpoint of step 2; the
    resumed job then ends as the straight run did."""
    ranks, steps, args = LAYOUTS["ddp-tp"]
    base = straight_run(straight, "ddp-tp", tmp_path_factory.getbasetemp())
    drill = tmp_path_factory.mktemp("drill")
    every = ["--steps", str(steps), "--checkpoint-every", "2", *args, *paths(drill)]
    proc = train(ranks, every, env={"MPIUCC_FAULT_DRILL": "1:3", "MPIUCC_TIMEOUT": "20"})
    ended = time.time()
    killed = re.search(r"fault drill: world rank 1 killed at ([\d.]+)", proc.stderr)
    assert killed, proc.stderr
    assert proc.returncode != 0, proc.stdout
    delay = ended - float(killed.group(1))
    print(f"fault drill: the job ended {delay:.2f} s after the kill")
    assert delay < 20, delay
    published = sorted(p.name for p in (drill / "ck").glob("step-*"))
    assert published == ["step-000002"], published
    train_ok(ranks, ["--steps", str(steps), "--resume", *args, *paths(drill)])
    assert_same_run(base, drill, steps)


def test_resume_refuses_another_layout_on_every_rank(
    straight: dict, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = straight_run(straight, "ddp-tp", tmp_path_factory.getbasetemp())
    _, steps, args = LAYOUTS["ddp-tp"]
    ck = ["--checkpoint-dir", str(base / "ck")]
    proc = train(2, ["--steps", str(steps), *args, "--resume", *ck], timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("cannot be resharded") == 1, proc.stderr
    assert "written with dp 2, this job has dp 1" in proc.stderr, proc.stderr


def test_uncompressed_run_resumes_on_another_dp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """An uncompressed run stopped on dp 2 and resumed on dp 4 (DCP reshards): the losses up to
    the stop are the straight run's, those after differ only by the reduction order."""
    steps, small = 6, ["--eval-every", "100"]
    straight = tmp_path_factory.mktemp("dp2-straight")
    train_ok(2, ["--steps", str(steps), *small, *paths(straight)])
    resumed = tmp_path_factory.mktemp("dp2-to-dp4")
    train_ok(2, ["--steps", str(steps), "--stop-after", "3", *small, *paths(resumed)])
    proc = train(4, ["--steps", str(steps), "--resume", *small, *paths(resumed)])
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    assert "dp 2 -> 4 (resharded)" in proc.stdout, proc.stdout
    (a,) = json.loads((straight / "out" / "metrics.json").read_text())["runs"]
    (b,) = json.loads((resumed / "out" / "metrics.json").read_text())["runs"]
    assert a["train_loss"][:3] == b["train_loss"][:3]
    rel = [abs(x - y) / abs(x) for x, y in zip(a["train_loss"], b["train_loss"], strict=True)]
    print(f"dp 2 -> 4 after step 3: largest relative loss difference {max(rel):.2e}")
    assert max(rel) < 1e-4, rel  # another reduction order: close, not the same bits
    pa = checkpoint_tensors(straight / "ck" / f"step-{steps:06d}")
    pb = checkpoint_tensors(resumed / "ck" / f"step-{steps:06d}")
    assert pa.keys() == pb.keys()
    worst = max(
        float((pa[k] - pb[k]).abs().max()) for k in pa if torch.is_tensor(pa[k]) and pa[k].numel()
    )
    print(f"dp 2 -> 4: largest parameter or optimizer-state difference {worst:.2e}")
    assert worst < 1e-3, worst


def checkpoints_of(root: Path, want: dict) -> Checkpoints:
    return Checkpoints(str(root), 0, want)


def test_resume_checks_what_it_takes(
    straight: dict, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """The latest published checkpoint, whole and of this job: anything else is refused with
    a reason, before anything is loaded; a half-written (``.tmp-``) one is ignored."""
    base = straight_run(straight, "ddp-tp", tmp_path_factory.getbasetemp())
    _, steps, _ = LAYOUTS["ddp-tp"]
    latest = base / "ck" / f"step-{steps:06d}"
    want = json.loads((latest / "COMPLETE").read_text())
    del want["step"]
    root = tmp_path / "ck"
    shutil.copytree(base / "ck", root)
    (root / ".tmp-step-000009").mkdir()  # a save that crashed: ignored
    ck = checkpoints_of(root, want)
    try:
        assert ck._examine(resume=True) == ("", steps, None)
        assert "holds checkpoints already" in ck._examine(resume=False)[0]
        other = checkpoints_of(root, {**want, "runs": {"compressed": {"dp": "ebq:rms:0.001"}}})
        assert "does not fit this job: runs:" in other._examine(resume=True)[0]
        other.close()
        layout = want["layout"]
        for change, says in (({"tp": 1}, "does not fit this job"), ({"dp": 1}, "resharded")):
            other = checkpoints_of(root, {**want, "ranks": 2, "layout": {**layout, **change}})
            assert says in other._examine(resume=True)[0], change
            other.close()
        (root / latest.name / "rank00003.pt").unlink()
        assert "rank00003.pt missing" in ck._examine(resume=True)[0]
        (root / latest.name / "COMPLETE").unlink()
        assert "is incomplete" in ck._examine(resume=True)[0]
        shutil.rmtree(root)
        assert "no checkpoint in" in ck._examine(resume=True)[0]
    finally:
        ck.close()


def test_rng_states_survive_the_rank_file(tmp_path: Path) -> None:
    """Nothing in the job draws from the global RNGs after the weights are made (batches come
    from a generator seeded by the step), so the resume test cannot see them: here they go
    through a rank file's torch.save and come back."""
    import random

    import numpy as np

    from pycomm.train.checkpoint import _rng_state, _set_rng_state

    torch.save(_rng_state(), tmp_path / "rng.pt")
    draws = torch.rand(3), np.random.rand(3), random.random()
    _set_rng_state(torch.load(tmp_path / "rng.pt", weights_only=False))
    again = torch.rand(3), np.random.rand(3), random.random()
    assert torch.equal(draws[0], again[0]) and (draws[1] == again[1]).all()
    assert draws[2] == again[2]
