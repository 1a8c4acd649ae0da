"""mpiucc's DDP hooks under mpiexec, with DDP itself on gloo."""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

SCRIPTS = Path(__file__).parent / "mpi"


@pytest.mark.parametrize("ranks", [2, 3])
def test_ddp_hooks(ranks: int, tmp_path: Path) -> None:
    out = run_mpi(SCRIPTS / "check_ddp_hooks.py", ranks, str(tmp_path / "store"), timeout=300)
    assert "passed" in out
