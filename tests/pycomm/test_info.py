"""pycomm.info() and `mpiucc info`: MPI library, thread level, UCC; `import pycomm` stays light."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("mpi4py")


def run_python(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return proc.stdout


def test_import_pycomm_loads_neither_torch_nor_codecs() -> None:
    out = run_python("import sys, pycomm; print('torch' in sys.modules, 'pycodecs' in sys.modules)")
    assert out.split() == ["False", "False"]


def test_info_reports_mpi_and_ucc() -> None:
    out = run_python("import json, pycomm; print(json.dumps(pycomm.info()))")
    found = json.loads(out)
    assert found["mpi_library"] and found["mpi_vendor"]
    assert found["thread_level"] in ("single", "funneled", "serialized", "multiple")
    assert found["ucc"]["collectives_via_ucc"] in (True, False, None)
    assert "simd_level" in found


def test_cli_info() -> None:
    code = "import sys; from pycomm.cli import main; sys.exit(main(['info']))"
    out = run_python(code)
    for label in ("MPI library", "thread level", "collectives via UCC", "codec SIMD level"):
        assert label in out
    data = json.loads(run_python("from pycomm.cli import main; main(['info', '--json'])"))
    assert data["thread_level"] == "multiple"
