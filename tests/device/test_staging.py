"""The staging pipeline with CPU tensors (the same logic as on a GPU, minus the streams), and
the DDP hook through it under mpiexec: equal to the CPU hook."""

import threading
from pathlib import Path

import pytest
import torch
from mpi_launch import run_mpi

from pycomm.distributed import staging

SCRIPTS = Path(__file__).parent / "mpi"


class Done:
    """A finished request (what ``start`` returns), optionally failing on wait."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    def wait(self) -> None:
        if self.error is not None:
            raise self.error


def test_segments_run_in_order_and_come_back():
    src = torch.arange(10, dtype=torch.float32)
    host = staging.pinned_like(src)
    seen, threads = [], set()

    def start(lo, hi):
        assert torch.equal(host[lo:hi], torch.arange(lo, hi, dtype=torch.float32))
        host[lo:hi] *= 2  # the "collective"
        seen.append((lo, hi))
        threads.add(threading.current_thread().name)
        return Done()

    after = []
    fut = staging.staged(src, host, [(0, 3), (3, 7), (7, 10)], start, after=lambda: after.append(1))
    assert fut.wait() is src
    assert torch.equal(src, 2 * torch.arange(10, dtype=torch.float32))
    assert seen == [(0, 3), (3, 7), (7, 10)] and after == [1]
    assert threading.current_thread().name not in threads  # off the caller's thread


def test_result_tensor_gets_the_values():
    src = torch.ones(4)
    result = torch.zeros(4, dtype=torch.bfloat16)
    fut = staging.staged(src, staging.pinned_like(src), [(0, 4)], lambda lo, hi: Done(),
                         result=result)  # fmt: skip
    assert fut.wait() is result and torch.equal(result, torch.ones(4, dtype=torch.bfloat16))


@pytest.mark.parametrize("where", ["start", "wait", "after"])
def test_a_failure_reaches_the_future_after_every_request(where):
    src = torch.zeros(6)
    waited = []

    class Tracked(Done):
        def wait(self):
            waited.append(1)
            super().wait()

    def start(lo, hi):
        if where == "start" and lo == 2:
            raise RuntimeError("boom")
        return Tracked(RuntimeError("boom") if where == "wait" and lo == 0 else None)

    def after():
        if where == "after":
            raise RuntimeError("boom")

    fut = staging.staged(src, staging.pinned_like(src), [(0, 2), (2, 4), (4, 6)], start,
                         after=after)  # fmt: skip
    with pytest.raises(RuntimeError, match="boom"):
        fut.wait()
    assert len(waited) == (1 if where == "start" else 3)  # every started request was waited


def test_empty_and_mismatched_buffers():
    src = torch.zeros(0)
    assert staging.staged(src, staging.pinned_like(src), [], lambda lo, hi: Done()).wait() is src
    with pytest.raises(ValueError, match="host"):
        staging.staged(torch.zeros(3), torch.zeros(4), [(0, 3)], lambda lo, hi: Done())
    with pytest.raises(ValueError, match="host"):
        staging.staged(torch.zeros(3), torch.zeros(3, dtype=torch.float64), [], lambda *a: Done())


def test_hook_through_staging_equals_the_cpu_hook():
    out = run_mpi(SCRIPTS / "check_staged_hook.py", 2, "cpu", timeout=240)
    assert "passed" in out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_hook_on_cuda_buckets_equals_the_cpu_hook():
    out = run_mpi(SCRIPTS / "check_staged_hook.py", 1, "cuda", timeout=240)
    assert "passed" in out
