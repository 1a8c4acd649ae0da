"""The MPI-served store under mpiexec: bad requests, long traffic (scripts in mpi/)."""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

pytest.importorskip("torch")
pytest.importorskip("mpi4py")

SCRIPTS = Path(__file__).parent / "mpi"


@pytest.mark.parametrize("scenario", ["malformed", "pickle", "sends"])
def test_store_survives_bad_requests_and_stays_bounded(scenario: str, tmp_path: Path) -> None:
    out = run_mpi(SCRIPTS / "check_store_faults.py", 2, scenario, str(tmp_path), timeout=180)
    assert f"store {scenario}: passed" in out
