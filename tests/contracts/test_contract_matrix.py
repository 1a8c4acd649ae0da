"""The contract matrix of issue 26: what every present and future fast path of pycomm's
collectives must keep (identical bits, the bound, IEEE non-finite sums, argument errors on one
rank, keys past auto's table), as hypothesis examples run in lockstep under MPI.

One launch per (ranks, node layout), ``EXAMPLES`` examples each (plus the explicit
ones), every failing one printed. Measured on the 2-core development machine under load
(other suites running): 2-45 s a launch (5 ranks the slowest), the whole file 85 s. On
7e7304f it found 10 failing cells (issue 26's cases); their timeouts made it 127-184 s then.
Run: ``.venv/bin/python -m pytest tests/contracts -v``.
"""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

SCRIPTS = Path(__file__).parent / "mpi"
#: Examples per matrix launch (hypothesis max_examples), besides the explicit ones.
EXAMPLES = 600
#: (ranks, ranks per emulated node; () is one node): flat, uneven 2+1 and 3+2, even 2+2.
LAYOUTS = [(2, ()), (3, ()), (3, (2, 1)), (4, (2, 2)), (5, (3, 2))]


@pytest.mark.parametrize(
    ("ranks", "nodes"), LAYOUTS, ids=[f"{r}-{'+'.join(map(str, n)) or 'flat'}" for r, n in LAYOUTS]
)
def test_matrix(ranks: int, nodes: tuple[int, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """Every drawn (collective, codec, algorithm, dtype, op, feedback, family, size) keeps
    its contract on these ranks and this layout."""
    monkeypatch.setenv("CONTRACT_EXAMPLES", str(EXAMPLES))
    out = run_mpi(SCRIPTS / "check_matrix.py", ranks, timeout=240, nodes=nodes)
    assert "matrix: passed" in out, out


def test_settled_keys() -> None:
    """An invalid argument on one rank of a settled key, and keys past auto_state.MAX_KEYS."""
    assert "settled: 3 ranks, 0 failed; passed" in run_mpi(
        SCRIPTS / "check_settled.py", 3, timeout=200
    )


def test_torch_bf16_fp16() -> None:
    """bf16 and fp16 tensors through the mpiucc backend's compressed all_reduce."""
    out = run_mpi(SCRIPTS / "check_torch.py", 2, timeout=200)
    assert "torch: 2 ranks, 0 failed; passed" in out


@pytest.mark.parametrize("ranks", [2, 3])
def test_overflow(ranks: int) -> None:
    """Data near the dtype's largest value, first and on kept keys, every mode and op."""
    out = run_mpi(SCRIPTS / "check_overflow.py", ranks, timeout=200)
    assert "overflow: passed" in out, out


@pytest.mark.parametrize("ranks", [2, 3])
def test_bad_arguments_on_one_rank(ranks: int) -> None:
    """Non-contiguous, read-only, wrong-dtype, wrong-size and foreign x, out, residual and stats
    on one rank, on the Python and the compiled paths: every rank raises in the same call."""
    out = run_mpi(SCRIPTS / "check_arguments.py", ranks, timeout=200)
    assert "arguments: passed" in out, out
