"""Run MPI scripts under mpiexec from pytest, with a timeout so that a hang fails the test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent  #: put on the scripts' path (mpi_helpers)
MPIEXEC = Path(sys.executable).parent / "mpiexec"


def launch_mpi(
    script: Path,
    ranks: int,
    *args: str,
    timeout: float = 180,
    mpiexec_args: tuple = (),
    nodes: tuple[int, ...] = (),
) -> subprocess.CompletedProcess:
    """Run a script on `ranks` MPI ranks and return the finished process; fail on a hang.

    ``nodes`` (ranks per node, summing to `ranks`) emulates a node layout: MPMD, each node's
    ranks with their own ``MPIUCC_NODE``."""
    if not MPIEXEC.exists():
        pytest.skip(f"no mpiexec beside {sys.executable}")
    path = os.pathsep.join(filter(None, (str(HERE), os.environ.get("PYTHONPATH"))))
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", PYTHONPATH=path)
    run = [sys.executable, str(script), *args]
    cmd = [str(MPIEXEC), *mpiexec_args, "-n", str(ranks), *run]
    if nodes:
        assert sum(nodes) == ranks, f"nodes {nodes} do not hold {ranks} ranks"
        cmd = [str(MPIEXEC), *mpiexec_args]
        for i, k in enumerate(nodes):
            cmd += [*([":"] if i else []), "-n", str(k), "env", f"MPIUCC_NODE=n{i}", *run]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        why = f"hung (> {timeout} s)"
        pytest.fail(f"{script.name} on {ranks} ranks {why}\n{exc.stdout}\n{exc.stderr}")


def run_mpi(
    script: Path, ranks: int, *args: str, timeout: float = 180, nodes: tuple[int, ...] = ()
) -> str:
    """Run a script on `ranks` MPI ranks (``nodes``: as ``launch_mpi``); fail the test on a
    non-zero exit or a hang."""
    proc = launch_mpi(script, ranks, *args, timeout=timeout, nodes=nodes)
    if proc.returncode != 0:
        why = f"failed with exit code {proc.returncode}"
        pytest.fail(f"{script.name} on {ranks} ranks {why}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout
