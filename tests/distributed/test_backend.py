"""The mpiucc torch backend under mpiexec on 2, 3 and 4 ranks (scripts in mpi/)."""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

torch = pytest.importorskip("torch")
pytest.importorskip("mpi4py")

SCRIPTS = Path(__file__).parent / "mpi"


@pytest.mark.parametrize("ranks", [2, 4])  # 3 ranks: the subgroup, store and timeout tests
def test_collectives_match_gloo(ranks: int) -> None:
    assert "collectives: passed" in run_mpi(SCRIPTS / "check_collectives.py", ranks, timeout=120)


@pytest.mark.parametrize("ranks", [2, 3])
def test_async_and_point_to_point(ranks: int) -> None:
    out = run_mpi(SCRIPTS / "check_async_p2p.py", ranks, timeout=90)
    assert "async and point-to-point: passed" in out


@pytest.mark.parametrize("ranks", [3, 4])
def test_subgroups(ranks: int) -> None:
    out = run_mpi(SCRIPTS / "check_subgroups.py", ranks, timeout=90)
    assert "subgroups: passed" in out
    assert "mpiucc subgroup of a gloo world: passed" in out


def test_mpi_served_store() -> None:
    assert "store: passed" in run_mpi(SCRIPTS / "check_store.py", 3, timeout=90)


def test_timeout_raises_instead_of_hanging() -> None:
    assert "timeouts: passed" in run_mpi(SCRIPTS / "check_timeout.py", 3, timeout=90)


@pytest.mark.parametrize("ranks", [2, 3])
def test_ddp_matches_gloo(ranks: int) -> None:
    assert "DDP: passed" in run_mpi(SCRIPTS / "check_ddp.py", ranks, timeout=120)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_staged_through_host() -> None:
    assert "cuda: passed" in run_mpi(SCRIPTS / "check_cuda.py", 2, timeout=120)


@pytest.mark.parametrize("ranks", [2, 3])
def test_mismatched_arguments_raise_on_every_rank(ranks: int) -> None:
    assert "mismatch: passed" in run_mpi(SCRIPTS / "check_mismatch.py", ranks, timeout=90)


def test_point_to_point_checks_size_dtype_and_time() -> None:
    out = run_mpi(SCRIPTS / "check_p2p_checks.py", 2, timeout=90)
    assert "checked point-to-point: passed" in out


@pytest.mark.parametrize("ranks", [2, 4])  # 4: a 2 x 2 mesh besides the 1-D ones
def test_device_mesh_fsdp2_and_tensor_parallel_match_gloo(ranks: int) -> None:
    assert "passed" in run_mpi(SCRIPTS / "check_mesh.py", ranks, timeout=240)


@pytest.mark.parametrize("ranks", [2, 4])
def test_compression_policy_trains_close_to_exact_and_checkpoints(ranks: int) -> None:
    out = run_mpi(SCRIPTS / "check_compression.py", ranks, timeout=240)
    assert "compression policy: passed" in out


def test_compression_policy_of_auto_keeps_its_contracts() -> None:
    assert "auto policy: passed" in run_mpi(SCRIPTS / "check_auto_policy.py", 2, timeout=240)


def test_contracts_hold_on_every_path() -> None:
    """Dropped Works keep their buffers, mismatched receives leave the tensor, collectives check
    dtypes and counts before any MPI call, a store add past int64 leaves the value (issue 26)."""
    assert "contracts: passed" in run_mpi(SCRIPTS / "check_contracts.py", 2, timeout=120)
