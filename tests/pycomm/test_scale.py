"""Compression at scale under mpiexec: CommStats' bytes, the two-phase allreduce, the hierarchy."""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

SCRIPTS = Path(__file__).parent / "mpi"


@pytest.mark.parametrize("ranks", [1, 4])
def test_stats_count_bytes_really_moved(ranks: int) -> None:
    """A 4-rank allgather reports each rank receiving the other 3 ranks' frames."""
    assert "scale: passed" in run_mpi(SCRIPTS / "check_scale.py", ranks, "stats")


@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 5])
def test_twophase_identical_bits_and_error_feedback(ranks: int) -> None:
    """Odd sizes, counts below the ranks, empty; EF without drift; the EF state pickles."""
    out = run_mpi(SCRIPTS / "check_scale.py", ranks, "twophase", "feedback", timeout=300)
    assert "scale: passed" in out


@pytest.mark.parametrize("layout", ["2,2", "2,2,2", "3,1,1"])
def test_hierarchy_on_emulated_nodes(layout: str) -> None:
    """2 x 2, 3 x 2 and an uneven layout: identical bits, the ebq bound, leaders-only traffic."""
    ranks = sum(int(k) for k in layout.split(","))
    out = run_mpi(SCRIPTS / "check_scale.py", ranks, f"hierarchy={layout}", timeout=300)
    assert "scale: passed" in out
