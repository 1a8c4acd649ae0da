"""The DDP hook follows its process group: a gloo subgroup's hook averages over its ranks only."""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

pytest.importorskip("torch")
pytest.importorskip("mpi4py")

from pycomm.distributed.hooks import mpi_ranks_of_group  # noqa: E402

SCRIPTS = Path(__file__).parent / "mpi"


def test_hook_on_a_gloo_subgroup_averages_over_its_ranks_only() -> None:
    out = run_mpi(SCRIPTS / "check_hook_group.py", 4, timeout=240)
    assert "hook follows its process group: passed" in out


def test_members_of_one_mpi_job_map_to_their_mpi_ranks() -> None:
    assert mpi_ranks_of_group([(2, 4), (0, 4), (3, 4)]) == [2, 0, 3]


@pytest.mark.parametrize(
    "members",
    [
        [(0, 1), (0, 1)],  # singleton MPI worlds (e.g. torchrun without mpiexec)
        [(0, 4), (1, 2)],  # two MPI jobs
        [(1, 4), (1, 4)],  # one MPI rank twice
        [(0, 2), (5, 2)],  # a rank outside its world
    ],
)
def test_members_not_of_one_mpi_job_raise(members: list[tuple[int, int]]) -> None:
    with pytest.raises(RuntimeError, match="not distinct ranks of one MPI job"):
        mpi_ranks_of_group(members)
