"""The backend's collectives on UCC teams (pycomm.ucc), and the choice of MPI or UCC.

The MPI runs need the UCC layer (``tools/build_ucc.sh``, then ``make build`` with UCC_HOME
set, and the LD_LIBRARY_PATH the script prints); without it they skip and say why. The
choice's rules are checked everywhere.
"""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

pytest.importorskip("torch")
pytest.importorskip("mpi4py")

from pycomm import ucc  # noqa: E402
from pycomm.distributed import transport  # noqa: E402

SCRIPTS = Path(__file__).parent / "mpi"
needs_ucc = pytest.mark.skipif(
    not ucc.available(), reason=f"pycomm's UCC layer: {ucc.unavailable_reason()}"
)


@needs_ucc
@pytest.mark.parametrize("ranks", [2, 3, 4])  # 3: the sub-group leaves a rank out
def test_collectives_on_ucc_match_mpi_bitwise(ranks: int) -> None:
    out = run_mpi(SCRIPTS / "check_ucc.py", ranks, timeout=240)
    assert "ucc collectives: passed" in out


def test_the_choice_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(transport.ENV, raising=False)
    assert transport.from_env() == "mpi"
    for choice in transport.CHOICES:
        monkeypatch.setenv(transport.ENV, f" {choice.upper()} ")
        assert transport.from_env() == choice
    monkeypatch.setenv(transport.ENV, "nccl")
    with pytest.raises(ValueError, match="MPIUCC_COLLECTIVES must be one of"):
        transport.from_env()


def test_auto_stays_on_mpi_until_measured() -> None:
    assert transport.resolve("auto") == "mpi"
    assert transport.resolve("mpi") == "mpi"
    with pytest.raises(ValueError):
        transport.resolve("gloo")


def test_ucc_without_the_layer_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ucc, "_ucc", None)
    monkeypatch.setattr(ucc, "_why", "the UCC layer was not built (no UCC found at build time)")
    assert not ucc.available() and ucc.version() is None
    with pytest.raises(RuntimeError, match="not built.*build_ucc.sh"):
        transport.resolve("ucc")


@needs_ucc
def test_ucc_with_the_layer() -> None:
    assert transport.resolve("ucc") == "ucc"
    assert ucc.version().count(".") >= 1
