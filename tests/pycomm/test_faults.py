"""Fault injection under mpiexec: no rank hangs, none returns data, every survivor raises.

A rank that never joins, one that freezes mid-collective (SIGSTOP) and one that dies in it
(SIGKILL, seen by the launcher), and ranks that disagree on settings or sizes.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from mpi_launch import launch_mpi, run_mpi

SCRIPT = Path(__file__).parent / "mpi" / "check_faults.py"
RANKS = 3
TIMEOUT = 2.0
SLACK = 8.0  # scheduling on an oversubscribed node, never a second timeout


def reports(out: str) -> list[tuple[int, str, str, float]]:
    """(rank, case, error type, seconds) of each ``rank R: case: Error after S s`` line."""
    lines = re.findall(r"rank (\d+): ([\w ]+): (\w+) after ([\d.]+) s", out)
    return [(int(r), case, err, float(s)) for r, case, err, s in lines]


def test_a_rank_that_never_joins_times_out_everywhere() -> None:
    out = run_mpi(SCRIPT, RANKS, "never", str(TIMEOUT), timeout=240)
    seen = reports(out)
    assert "RETURNED" not in out and "never: passed" in out
    first = [(r, case, s) for r, case, err, s in seen if not case.endswith("again")]
    assert len(first) == 12 * (RANKS - 1), out  # every case on every survivor
    for r, case, err, s in seen:
        assert err == "CommTimeout", (r, case, err)
        if case.endswith("again"):  # a broken communicator refuses at once
            assert s < 0.5, (r, case, s)
        else:
            assert TIMEOUT * 0.95 <= s <= TIMEOUT + SLACK, (r, case, s)


def test_a_rank_frozen_mid_collective_times_out_on_every_survivor() -> None:
    start = time.monotonic()
    proc = launch_mpi(SCRIPT, RANKS, "freezes", str(TIMEOUT), timeout=120)
    seen = reports(proc.stdout)
    assert proc.returncode != 0 and "RETURNED" not in proc.stdout
    assert sorted(r for r, *_ in seen) == list(range(RANKS - 1)), proc.stdout + proc.stderr
    for r, _case, err, s in seen:
        assert err == "CommTimeout" and TIMEOUT * 0.95 <= s <= TIMEOUT + SLACK, (r, err, s)
    assert time.monotonic() - start < 60


def test_a_rank_that_dies_mid_collective_ends_the_job() -> None:
    start = time.monotonic()
    proc = launch_mpi(SCRIPT, RANKS, "dies", str(TIMEOUT), timeout=120)
    took = time.monotonic() - start
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "RETURNED" not in proc.stdout
    for r, _case, err, s in reports(proc.stdout):
        # A survivor that got to report timed out, or MPI told it of the death (MPI.Exception).
        assert err in ("CommTimeout", "Exception") and s <= TIMEOUT + SLACK, (r, err, s)
    assert took < TIMEOUT + SLACK + 10, took  # the launcher ends the job: no hang


def test_mismatched_settings_and_sizes_raise_on_every_rank() -> None:
    out = run_mpi(SCRIPT, RANKS, "mismatch", str(TIMEOUT), timeout=120)
    assert "mismatch: passed" in out and "RETURNED" not in out
    seen = reports(out)
    assert {err for *_, err, _ in seen} == {"SettingsMismatchError"}
    assert len(seen) == 9 * RANKS + 2, out  # 9 collectives everywhere, 2 receives
