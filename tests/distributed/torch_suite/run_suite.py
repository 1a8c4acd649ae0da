"""torch's own distributed test suite against the mpiucc backend, under mpiexec.

    mpiexec -n 4 python tests/distributed/torch_suite/run_suite.py [-k PATTERN ...]

``torch/testing/_internal/distributed/distributed_test.py`` (shipped in the torch wheel) is
written for processes that torch spawns itself; here each MPI rank is one of those processes
and runs every selected test in turn, as torch's ``TestDistBackend._run`` does: make the world
group (``mpi://``), run the test, barrier, destroy the world. The ranks then agree on each
test's outcome, and rank 0 prints one line per test and a summary; the exit status is non-zero
when a test failed on any rank.

Every test of the suite runs (about 20 s on 2 ranks), minus those ``skips.py`` names, each with
its reason (README.md beside this file sums them up). Tests that need CUDA, NCCL or a named
backend (gloo, nccl, mpi) skip themselves through torch's own decorators; the runner prints
their reasons and counts them as skipped.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import sys
import tempfile
import time
import traceback
import unittest
import warnings

from mpi4py import MPI

faulthandler.register(signal.SIGUSR1)  # kill -USR1 a hung rank for its stacks
WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
_tmp = WORLD.bcast(tempfile.mkdtemp(prefix="mpiucc-torch-suite-") if RANK == 0 else None)
for sub in ("barrier", "test_dir", "init_dir"):
    os.makedirs(os.path.join(_tmp, sub), exist_ok=True)
# distributed_test.py reads these when imported.
os.environ.update(
    BACKEND="mpiucc", WORLD_SIZE=str(SIZE), RANK=str(RANK), TEMP_DIR=_tmp, INIT_METHOD="mpi://"
)

import torch.distributed as dist  # noqa: E402
from torch.testing._internal.common_distributed import (  # noqa: E402
    TEST_SKIPS,
    DistTestCases,
)
from torch.testing._internal.common_utils import set_rng_seed  # noqa: E402

import pycomm.distributed  # noqa: E402, F401  (registers "mpiucc" and "mpi://")

# What the backend implements, in the suite's own terms (CPU only: not "gpu" nor "cuda").
for feature in ("ddp", "subgroup", "plugin"):
    DistTestCases.backend_feature[feature].add("mpiucc")

from skips import skip_reason  # noqa: E402
from torch.testing._internal.distributed import distributed_test as suite  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)
_EXIT_REASONS = {s.exit_code: s.message for s in TEST_SKIPS.values()}


class MpiuccSuite(suite.TestDistBackend, suite.DistributedTest._DistTestBase):
    """The suite's tests on this MPI rank (torch's spawning and file barriers left out)."""

    def _barrier(self, *args, **kwargs) -> None:
        if args or kwargs.get("wait_for") is not None:  # partial: the suite's own, over files
            suite.Barrier.sync(*args, **kwargs)
        else:
            WORLD.Barrier()


def run_one(name: str, timeout_s: float) -> tuple[str, str]:
    """('passed' | 'skipped' | 'failed', detail) of one test on this rank."""
    method = getattr(MpiuccSuite, name)
    if getattr(method, "__unittest_skip__", False):  # torch's skip_but_pass_in_sandcastle_if
        return "skipped", method.__unittest_skip_why__
    test = MpiuccSuite(name)
    test.rank = RANK
    test.file_name = os.path.join(_tmp, "init_dir", f"{name}.init")
    suite.Barrier.init() if RANK == 0 else None
    WORLD.Barrier()
    timeout = suite.timedelta(seconds=suite.CUSTOM_PG_TIMEOUT.get(name, timeout_s))
    dist.init_process_group("mpiucc", init_method="mpi://", timeout=timeout)
    set_rng_seed()  # as torch's run_test: every rank starts from the same seed
    try:
        getattr(test, name)()
        outcome = ("passed", "")
    except unittest.SkipTest as exc:
        outcome = ("skipped", str(exc))
    except SystemExit as exc:  # torch's decorators skip by exiting with a known code
        code = exc.code if isinstance(exc.code, int) else -1
        outcome = ("skipped", _EXIT_REASONS[code]) if code in _EXIT_REASONS else ("failed", "")
    except Exception:
        outcome = ("failed", traceback.format_exc())
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    WORLD.Barrier()
    return outcome


def selected_tests(patterns: list[str]) -> list[str]:
    names = sorted(n for n in dir(MpiuccSuite) if n.startswith("test_"))
    if patterns:
        names = [n for n in names if any(p in n for p in patterns)]
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", action="append", default=[], help="run tests whose name has this")
    parser.add_argument("--timeout", type=float, default=60.0, help="group timeout (s)")
    args = parser.parse_args()
    counts = {"passed": 0, "skipped": 0, "failed": 0}
    t0 = time.monotonic()
    for name in selected_tests(args.k):
        why = skip_reason(name)
        if why is not None:
            status, detail = "skipped", f"by the runner: {why}"
        else:
            started = time.monotonic()
            status, detail = run_one(name, args.timeout)
            detail = detail or f"{time.monotonic() - started:.1f} s"
        outcomes = WORLD.gather((status, detail), root=0)
        if RANK == 0:
            failed = [(r, d) for r, (s, d) in enumerate(outcomes) if s == "failed"]
            status = "failed" if failed else status
            counts[status] += 1
            line = detail if not failed else "\n".join(f"rank {r}: {d}" for r, d in failed)
            print(f"{status.upper():8} {name}  {line}", flush=True)
    if RANK == 0:
        took = time.monotonic() - t0
        summary = ", ".join(f"{v} {k}" for k, v in counts.items())
        print(f"torch distributed suite on mpiucc, {SIZE} ranks: {summary} ({took:.0f} s)")
    return int(WORLD.bcast(counts["failed"] if RANK == 0 else None) > 0)


if __name__ == "__main__":
    sys.exit(main())
