"""The wait policy: a waiting caller yields until PATIENT_SPIN_S before it naps; a background
thread (the engine's, the wire's) naps early, leaving the cores to the computation it overlaps."""

from __future__ import annotations

import threading
import time

import pytest

from pycomm.collectives import waits


def _ready_after(seconds: float):
    ready_at = time.monotonic() + seconds
    return lambda: time.monotonic() >= ready_at


@pytest.fixture
def naps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    seen: list[float] = []
    real_sleep = time.sleep

    def sleep(s: float) -> None:
        seen.append(s)
        real_sleep(s)

    monkeypatch.setattr(waits.time, "sleep", sleep)
    return seen


def test_a_waiting_caller_yields_instead_of_napping(naps: list[float]) -> None:
    assert waits.PATIENT_SPIN_S >= 3e-3
    assert waits.poll(_ready_after(2e-3), time.monotonic() + 10)
    assert naps == []


def test_a_background_thread_naps_early(naps: list[float]) -> None:
    done: list[bool] = []

    def background() -> None:
        waits.background_thread()
        # ready well within a caller's patience: only a background thread naps here
        done.append(waits.poll(_ready_after(waits.PATIENT_SPIN_S / 2), time.monotonic() + 10))

    thread = threading.Thread(target=background)
    thread.start()
    thread.join()
    assert done == [True] and naps
    assert max(naps) <= waits.LAST_NAP_S


def test_a_caller_naps_after_its_patience(naps: list[float]) -> None:
    assert waits.poll(_ready_after(waits.PATIENT_SPIN_S + 20e-3), time.monotonic() + 10)
    assert naps and max(naps) <= waits.LAST_NAP_S


def test_the_deadline_ends_a_wait() -> None:
    start = time.monotonic()
    assert not waits.poll(lambda: False, start + 0.05)
    assert 0.05 <= time.monotonic() - start < 1.0
