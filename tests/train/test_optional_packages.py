"""The training job without its optional packages, as a user's `pip install` may leave it.

Written behaviour (docs/install.md): without matplotlib or tqdm (the ``train`` extra) the job
degrades and exits 0: summary.txt and metrics.json are written first, then no loss.png and a
note in the summary; plain progress lines instead of a bar. Without torch or mpi4py it refuses
at start, naming the extra, before any work.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mpi_launch import launch_mpi

pytest.importorskip("torch")
pytest.importorskip("mpi4py")

SHIM = Path(__file__).parent / "mpi" / "run_without.py"
TINY = "--layers 2 --width 32 --heads 4 --seq 16 --batch 8 --micro-batches 2 --steps 2"
TINY += " --eval-every 2 --val-batches 1 --data-limit-mb 0.5"


def test_without_matplotlib_and_tqdm_the_job_finishes_without_a_plot(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "loss.png").write_bytes(b"a plot of an earlier run")
    args = ["matplotlib,tqdm", *TINY.split(), "--baseline", "--compress", "--out", str(out)]
    proc = launch_mpi(SHIM, 2, *args, timeout=150)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = (out / "summary.txt").read_text()
    assert "== compressed against baseline" in summary
    assert summary.rstrip().endswith(
        "note: loss.png not drawn: matplotlib is not installed (pip install 'mpiucc[train]'); "
        "metrics.json holds the curves"
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert [r["name"] for r in metrics["runs"]] == ["baseline", "compressed"]
    assert all(len(r["train_loss"]) == 2 for r in metrics["runs"])
    assert not (out / "loss.png").exists()  # the stale plot is gone, none drawn
    assert f"wrote {out}/summary.txt, metrics.json\n" in proc.stdout
    assert "note: loss.png not drawn" in proc.stdout
    assert proc.stderr.count("no progress bar: tqdm is not installed") == 1  # rank 0 only
    assert "train step 2/2: base=" in proc.stdout


@pytest.mark.parametrize("blocked, extra", [("torch", "[torch]"), ("mpi4py,torch", "[mpi,torch]")])
def test_without_torch_or_mpi4py_the_job_refuses_at_start(blocked: str, extra: str) -> None:
    cmd = [sys.executable, str(SHIM), blocked, *TINY.split()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert f"pip install 'mpiucc{extra}'" in proc.stderr
    assert "Traceback" not in proc.stderr
