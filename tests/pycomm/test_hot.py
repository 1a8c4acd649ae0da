"""The compiled path of settled allreduce calls keeps every contract of the Python path."""

import warnings
from pathlib import Path

import pytest
from mpi_launch import run_mpi

from pycomm.collectives import hot

SCRIPT = Path(__file__).parent / "mpi" / "check_hot.py"


@pytest.mark.skipif(hot.status().startswith("not built"), reason=hot.status())
@pytest.mark.parametrize("ranks", [2, 3])
def test_compiled_path_keeps_the_contracts(ranks: int) -> None:
    assert "hot: passed" in run_mpi(SCRIPT, ranks, timeout=300)


def test_an_unbuilt_compiled_path_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """No build for the MPI mpi4py runs on: the first settled call warns, saying why and how
    to fix it; later ones do not; MPIUCC_HOT=0 (off on purpose) never warns."""
    import numpy as np
    from mpi4py import MPI

    from pycomm.collectives.engine import Engine

    eng, a = Engine(MPI.COMM_SELF), np.zeros(4, np.float32)
    monkeypatch.setattr(hot, "_module", None)
    monkeypatch.setattr(hot, "_warned", [])
    monkeypatch.setattr(hot, "_status", "not built for mpich (no mpi.h at build time)")
    with pytest.warns(RuntimeWarning, match="no mpi.h at build time.*MPIUCC_HOT=0"):
        hot.settle(eng, ("k",), a, False, 1, "label", lambda *_: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hot.settle(eng, ("k",), a, False, 1, "label", lambda *_: None)
        monkeypatch.setattr(hot, "_warned", [])
        monkeypatch.setattr(hot, "_status", "off (MPIUCC_HOT=0)")
        hot.settle(eng, ("k",), a, False, 1, "label", lambda *_: None)
