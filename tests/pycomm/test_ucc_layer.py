"""pycomm.ucc imports with or without its compiled layer; `mpiucc info` reports it."""

import json
import os
import subprocess
import sys

import pytest


def test_pycomm_ucc_imports_and_says_whether_it_is_there() -> None:
    from pycomm import ucc

    assert isinstance(ucc.available(), bool)
    if ucc.available():
        assert ucc.unavailable_reason() is None and ucc.version()
    else:
        assert ucc.unavailable_reason() and ucc.version() is None


def test_info_reports_the_ucc_layer() -> None:
    pytest.importorskip("mpi4py")
    code = "from pycomm.cli import main; main(['info']); main(['info', '--json'])"
    env_choice = "auto"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "MPIUCC_COLLECTIVES": env_choice},
    )
    text, _, blob = proc.stdout.partition("{")
    layer = json.loads("{" + blob)["ucc_layer"]
    assert set(layer) == {
        "built", "version", "why_not", "library", "components", "settings", "supports",
        "collectives", "ucx_library", "groups",
    }  # fmt: skip
    assert layer["collectives"] == env_choice and layer["groups"] is None  # no job, no groups
    assert "pycomm UCC layer" in text
    assert (layer["version"] is not None) == layer["built"]
    if not layer["built"]:
        assert not layer["components"] and not layer["supports"] and layer["library"] is None
        return
    assert "group collectives on  auto (MPIUCC_COLLECTIVES" in text
    assert "ucp" in layer["components"]["tl"] and "basic" in layer["components"]["cl"]
    assert {"allreduce", "reduce", "gatherv", "scatterv"} <= set(layer["supports"])
    assert layer["settings"]["UCX_TLS"] in ("all (default)", os.environ.get("UCX_TLS"))
    assert "UCC components" in text and "tl self, ucp" in text
