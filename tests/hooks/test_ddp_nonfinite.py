"""mpiucc_compress_hook with NaN/Inf gradients under mpiexec (DDP on gloo)."""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

SCRIPTS = Path(__file__).parent / "mpi"


@pytest.mark.parametrize("ranks", [2, 3])
def test_nonfinite_buckets_are_counted_and_skippable(ranks: int, tmp_path: Path) -> None:
    out = run_mpi(SCRIPTS / "check_ddp_nonfinite.py", ranks, str(tmp_path / "store"), timeout=300)
    assert "passed" in out
