"""Issue 26's defects stay fixed: each contract on the path that once broke it (under mpiexec)."""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

SCRIPT = Path(__file__).parent / "mpi" / "check_contracts.py"


@pytest.mark.parametrize("ranks", [2, 3])
def test_contracts_hold_off_the_tested_paths(ranks: int) -> None:
    assert "contracts: passed" in run_mpi(SCRIPT, ranks, timeout=240)
