"""torch's own distributed test suite (shipped in the torch wheel) against the mpiucc backend."""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

pytest.importorskip("torch")
pytest.importorskip("mpi4py")
pytest.importorskip("expecttest")  # torch.testing._internal imports it

RUNNER = Path(__file__).parent / "torch_suite" / "run_suite.py"


# 8 ranks: the suite runs its [1, 2]-subgroup tests only from 8 ranks on (non-MPI backends)
@pytest.mark.parametrize("ranks", [2, 4, 8])
def test_torch_distributed_suite_passes(ranks: int) -> None:
    out = run_mpi(RUNNER, ranks, timeout=420)
    summary = out.strip().splitlines()[-1]
    assert f"{ranks} ranks:" in summary and " 0 failed" in summary, summary
    assert int(summary.split(": ")[1].split(" passed")[0]) >= 60, summary
