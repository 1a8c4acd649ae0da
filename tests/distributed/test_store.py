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


@pytest.mark.parametrize("start, amount", [(2**63 - 2, 5), (-(2**63), -1), (2**70, 0)])
def test_an_add_past_int64_is_refused_and_leaves_the_value(start: int, amount: int) -> None:
    from pycomm.distributed._store_table import Table
    from pycomm.distributed._store_wire import Op

    table = Table()
    table.apply(Op.SET, ("k", str(start).encode()))
    with pytest.raises(ValueError, match="outside int64"):
        table.apply(Op.ADD, ("k", amount))
    assert table.data["k"] == str(start).encode()
