"""pycomm's compressed collectives under mpiexec on 2, 3 and 4 ranks."""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

SCRIPTS = Path(__file__).parent / "mpi"


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_allreduce_and_reduce_scatter(ranks: int) -> None:
    assert "passed" in run_mpi(SCRIPTS / "check_allreduce.py", ranks)


@pytest.mark.parametrize("ranks", [2, 3])
def test_allgather_bcast_p2p(ranks: int) -> None:
    assert "passed" in run_mpi(SCRIPTS / "check_gather_p2p.py", ranks)


def test_single_rank() -> None:
    assert "passed" in run_mpi(SCRIPTS / "check_allreduce.py", 1)


def test_runtime_defects_stay_fixed() -> None:
    """Handles reused after Free, sticky request errors, argument errors, first-touch order."""
    assert "runtime: passed" in run_mpi(SCRIPTS / "check_runtime.py", 2, timeout=120)


def test_point_to_point_contracts_hold() -> None:
    """Dropped requests keep their buffers until MPI is done; a mismatched receive leaves out."""
    assert "p2p contracts: passed" in run_mpi(SCRIPTS / "check_p2p_contracts.py", 2, timeout=120)


def test_posted_receives_progress_keep_mpi_order_and_refuse_oversized_messages() -> None:
    assert "p2p matching: passed" in run_mpi(SCRIPTS / "check_p2p_matching.py", 2, timeout=120)
