"""One rule says whether the torch backend checks (pycomm's own collectives always agree)."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("mpi4py")

PROBE = (
    "import sys; from pycomm.collectives import checking; "
    "print(checking.enabled(), 'torch' in sys.modules)"
)


@pytest.mark.parametrize(
    "env, on",
    [
        ({}, False),
        ({"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}, True),
        ({"TORCH_DISTRIBUTED_DEBUG": "detail"}, True),
        ({"TORCH_DISTRIBUTED_DEBUG": "INFO"}, False),
        ({"MPIUCC_CHECK": "1"}, True),
        ({"MPIUCC_CHECK": "0", "TORCH_DISTRIBUTED_DEBUG": "DETAIL"}, False),
    ],
)
def test_checking_follows_torch_and_mpiucc_check_without_torch(env: dict, on: bool) -> None:
    base = {
        k: v for k, v in os.environ.items() if k not in ("MPIUCC_CHECK", "TORCH_DISTRIBUTED_DEBUG")
    }
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**base, **env},
    )
    assert proc.stdout.split() == [str(on), "False"]
