"""mpiucc's DDP hooks under mpiexec, with DDP itself on gloo."""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

SCRIPTS = Path(__file__).parent / "mpi"


@pytest.mark.parametrize("ranks", [2, 3])
def test_ddp_hooks(ranks: int, tmp_path: Path) -> None:
    out = run_mpi(SCRIPTS / "check_ddp_hooks.py", ranks, str(tmp_path / "store"), timeout=300)
    assert "passed" in out


def test_ddp_hook_with_auto(tmp_path: Path) -> None:
    """codec="auto": compressed on a slow link, raw on a fast one, exact when lossless."""
    out = run_mpi(SCRIPTS / "check_auto_hook.py", 2, str(tmp_path / "store"), timeout=300)
    assert "auto hook checks passed" in out
