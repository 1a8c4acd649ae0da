"""Run MPI scripts under mpiexec from pytest, with a timeout so that a hang fails the test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "mpi"
MPIEXEC = Path(sys.executable).parent / "mpiexec"


def run_mpi(script: str, ranks: int, *args: str, timeout: float = 180) -> str:
    """Run tests/pycomm/mpi/<script> on `ranks` ranks; fail on a non-zero exit or a hang."""
    if not MPIEXEC.exists():
        pytest.skip(f"no mpiexec beside {sys.executable}")
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    cmd = [str(MPIEXEC), "-n", str(ranks), sys.executable, str(SCRIPTS / script), *args]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{script} on {ranks} ranks hung (> {timeout} s)\n{exc.stdout}\n{exc.stderr}")
    if proc.returncode != 0:
        pytest.fail(
            f"{script} on {ranks} ranks failed ({proc.returncode})\n{proc.stdout}\n{proc.stderr}"
        )
    return proc.stdout
