"""Importing pycomm.distributed and the bare init_process_group under mpiexec (scripts in mpi/)."""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

pytest.importorskip("torch")
pytest.importorskip("mpi4py")

SCRIPTS = Path(__file__).parent / "mpi"


def test_import_makes_no_mpi_call() -> None:
    out = run_mpi(SCRIPTS / "check_import.py", 2, timeout=90)
    assert "import without MPI calls: passed" in out


@pytest.mark.parametrize("ranks", [2, 3])
def test_bare_init_opens_no_socket_on_every_interface(ranks: int) -> None:
    out = run_mpi(SCRIPTS / "check_env_init.py", ranks, timeout=120)
    assert "bare init_process_group: passed" in out
