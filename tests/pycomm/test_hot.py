"""The compiled path of settled allreduce calls keeps every contract of the Python path."""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

from pycomm.collectives import hot

SCRIPT = Path(__file__).parent / "mpi" / "check_hot.py"


@pytest.mark.skipif(hot.status().startswith("not built"), reason=hot.status())
@pytest.mark.parametrize("ranks", [2, 3])
def test_compiled_path_keeps_the_contracts(ranks: int) -> None:
    assert "hot: passed" in run_mpi(SCRIPT, ranks, timeout=300)
