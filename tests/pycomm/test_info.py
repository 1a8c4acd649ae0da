"""pycomm.info() and `mpiucc info`: MPI library, thread level, UCC; `import pycomm` stays light;
under mpiexec one report for the job, with every rank's facts."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mpi_launch import run_mpi

from pycomm.info_report import PER_RANK

pytest.importorskip("mpi4py")

SCRIPTS = Path(__file__).parent / "mpi"


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


def test_cli_version() -> None:
    from pycomm.info import mpiucc_version

    out = run_python("import sys; from pycomm.cli import main; sys.exit(main(['--version']))")
    assert out.strip() == f"mpiucc {mpiucc_version()}"


def test_info_lists_the_extras_present() -> None:
    # the dev environment has every extra; tqdm is made unimportable, as if never installed
    code = (
        "import sys, json; sys.modules['tqdm'] = None; from pycomm.cli import main; "
        "main(['info']); main(['info', '--json'])"
    )
    out = run_python(code)
    text, _, blob = out.partition("{")
    assert "extra [mpi]" in text and "extra [torch]" in text and "extra [numcodecs]" in text
    assert re.search(r"^extra \[train\] +no \(tqdm missing\): matplotlib \d", text, re.M)
    extras = json.loads("{" + blob)["extras"]
    assert extras["train"]["tqdm"] is None and extras["train"]["matplotlib"]
    assert extras["mpi"]["mpi4py"] and extras["torch"]["torch"]


def test_info_without_mpi4py_says_so() -> None:
    code = "import sys; sys.modules['mpi4py'] = None; from pycomm.cli import main; main(['info'])"
    out = run_python(code)
    assert re.search(r"^MPI library +not available \(", out, re.M)
    assert re.search(r"^extra \[mpi\] +no \(mpi4py missing\)$", out, re.M)
    assert "codec SIMD level" in out


def test_info_shows_what_auto_would_choose(tmp_path) -> None:
    code = (
        f"import json, os, pycomm; os.environ['MPIUCC_CACHE_DIR'] = {str(tmp_path)!r}; "
        "print(json.dumps(pycomm.info()['auto']))"
    )
    found = json.loads(run_python(code))
    assert set(found["choices"]) == {"64 KiB", "1 MiB", "64 MiB"}
    assert all(
        c in ("raw", "fp16", "bf16", "ebq_fast", "ebq_dense") for c in found["choices"].values()
    )
    assert found["link"]["bandwidth_gbit_s"] > 0 and found["codec_speeds"]["ebq_fast"] > 0
    out = run_python("import sys; from pycomm.cli import main; sys.exit(main(['info']))")
    assert "auto: link" in out and "auto: tries first" in out


def test_info_under_mpiexec_prints_once_with_every_rank() -> None:
    out = run_mpi(SCRIPTS / "check_info.py", 2, "info")
    assert out.count("MPI library") == 1  # rank 0 alone prints
    assert re.search(r"^ranks +2 \(MPI_COMM_WORLD\)$", out, re.M)
    assert re.search(r"^host +\S+ \(same on all ranks\)$", out, re.M)
    assert re.search(r"^compiled allreduce +.+ \(same on all ranks\)$", out, re.M)
    data = json.loads(run_mpi(SCRIPTS / "check_info.py", 2, "info", "--json"))
    assert len(data["ranks"]) == 2
    assert all(set(r) == set(PER_RANK) for r in data["ranks"])


def test_info_under_mpiexec_shows_each_rank_where_they_differ() -> None:
    out = run_mpi(SCRIPTS / "check_info.py", 2, "--off-on-rank-1", "info")
    assert out.count("MPI library") == 1
    rows = re.search(r"^compiled allreduce +rank 0: (.+)\n +rank 1: (.+)$", out, re.M)
    assert rows, out
    assert not rows.group(1).startswith("off") and rows.group(2) == "off (MPIUCC_HOT=0)"


def test_format_info_groups_ranks_by_value() -> None:
    from pycomm.info import info
    from pycomm.info_report import format_info

    found = info()
    found["ranks"] = [{"host": h} for h in ("a", "a", "a", "b", "a")]
    text = format_info(found)
    assert re.search(r"^host +ranks 0-2, 4: a\n +rank 3: b$", text, re.M), text
