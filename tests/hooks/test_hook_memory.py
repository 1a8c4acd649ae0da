"""mpiucc_compress_hook's peak extra memory per bucket (ebq, int8, sign; with and without error
feedback) stays within 2x the bucket's size, allocated and resident (bench/hook_memory.py).

Buckets of at least two pipeline segments (staging.SEGMENT_COUNT); a bucket of one segment
that goes out as one frame (one rank) reserves ebq's worst-case output buffer, 2.08x
(untouched, so not resident).
"""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

BENCH = Path(__file__).resolve().parents[2] / "bench" / "hook_memory.py"


@pytest.mark.parametrize("ranks", [1, 2])
@pytest.mark.parametrize("width", [1024, 2048])  # buckets of 1 Mi and 4 Mi float32
def test_hook_peak_memory_within_twice_the_bucket(ranks: int, width: int) -> None:
    out = run_mpi(BENCH, ranks, "--width", str(width), "--max-ratio", "2.0", timeout=300)
    assert "| ebq | yes |" in out
