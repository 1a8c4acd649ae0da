"""NaN and ±Inf through the compressed collectives, under mpiexec."""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

SCRIPTS = Path(__file__).parent / "mpi"


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_nonfinite_values_reach_every_rank_alike(ranks: int) -> None:
    assert "passed" in run_mpi(SCRIPTS / "check_nonfinite.py", ranks)
