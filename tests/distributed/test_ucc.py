"""The backend's collectives on UCC teams (pycomm.ucc), and the choice of MPI or UCC.

The MPI runs need the UCC layer (``tools/build_ucc.sh``, then ``make build`` with UCC_HOME
set, and the LD_LIBRARY_PATH the script prints); without it they skip and say why. The
choice's rules are checked everywhere.
"""

from pathlib import Path

import pytest
from mpi_launch import run_mpi

pytest.importorskip("torch")
pytest.importorskip("mpi4py")

from pycomm import ucc  # noqa: E402
from pycomm.distributed import transport  # noqa: E402

SCRIPTS = Path(__file__).parent / "mpi"
needs_ucc = pytest.mark.skipif(
    not ucc.available(), reason=f"pycomm's UCC layer: {ucc.unavailable_reason()}"
)


@needs_ucc
@pytest.mark.parametrize(
    ("ranks", "context"),
    [(2, "world"), (3, "teams"), (4, "world"), (2, "teams")],  # 3: a sub-group leaves one out
)
def test_collectives_on_ucc_match_mpi_bitwise(ranks: int, context: str) -> None:
    args = ("--context-over-world",) if context == "world" else ()
    out = run_mpi(SCRIPTS / "check_ucc.py", ranks, *args, timeout=240)
    assert "ucc collectives: passed" in out


@needs_ucc
def test_a_team_ucx_cannot_connect_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    """UCX_TLS=sm,self and a context per team: UCC reports success and moves nothing; pycomm
    raises on every rank when it makes the team."""
    monkeypatch.setenv("UCX_TLS", "sm,self")
    monkeypatch.delenv(transport.ENV, raising=False)
    out = run_mpi(SCRIPTS / "check_ucc_unreachable.py", 2, timeout=120)
    assert "unreachable ucc team: passed" in out


def test_the_choice_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(transport.ENV, raising=False)
    assert transport.from_env() == "mpi"
    for choice in transport.CHOICES:
        monkeypatch.setenv(transport.ENV, f" {choice.upper()} ")
        assert transport.from_env() == choice
    monkeypatch.setenv(transport.ENV, "nccl")
    with pytest.raises(ValueError, match="MPIUCC_COLLECTIVES must be one of"):
        transport.from_env()


def test_auto_is_mpi_without_the_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ucc, "_ucc", None)
    assert transport.resolve("auto") == "mpi"
    assert transport.resolve("mpi") == "mpi"
    with pytest.raises(ValueError):
        transport.resolve("gloo")


def test_size_classes_are_powers_of_four() -> None:
    from pycomm.distributed import ucc_auto

    classes = [ucc_auto.size_class(n) for n in (0, 1, 3, 4, 15, 16, 4095, 4096, 64 << 20)]
    assert classes == [0, 0, 0, 1, 1, 2, 5, 6, 13]
    assert ucc_auto.class_range(6) == "4 KiB-16 KiB"
    assert ucc_auto.class_range(ucc_auto.ANY_SIZE) == "any size"


def _auto_on_one_rank(monkeypatch: pytest.MonkeyPatch, cost: dict[str, float]):
    """An ``Auto`` over COMM_SELF whose calls move nothing and whose measured calls record
    ``cost[lib]`` seconds (changed by the test as it goes): the choices follow the injected
    times alone. Returns it and the list of libraries its calls went to."""
    from mpi4py import MPI

    from pycomm.collectives.engine import Engine
    from pycomm.distributed import ucc_auto

    went: list[str] = []

    def call(self, lib: str, name: str, args: tuple):
        went.append(lib)
        return [], None, None

    real_take = ucc_auto.Key.take

    def take(self, lib: str):
        record = real_take(self, lib)
        return None if record is None else lambda seconds: record(cost[lib])

    monkeypatch.setattr(ucc_auto.Auto, "_call", call)
    monkeypatch.setattr(ucc_auto.Key, "take", take)
    return ucc_auto.Auto(Engine(MPI.COMM_SELF)), went


def test_auto_times_both_again_and_a_faster_library_overturns_the_choice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After settling, a round re-times both libraries: KEEP calls after a change, twice as
    many after each round that confirms the choice (up to MAX_KEEP); the other library gets a
    bounded share of the calls, and a library that became faster takes over at the next
    round."""
    from pycomm.distributed import ucc_auto
    from pycomm.distributed.ucc_auto import LIBRARY, ROUND

    KEEP, MAX_KEEP = LIBRARY.keep, LIBRARY.max_keep
    WARMUP, SAMPLES = LIBRARY.warmup, LIBRARY.samples

    cost = {"mpi": 1e-5, "ucc": 2e-5}
    auto, went = _auto_on_one_rank(monkeypatch, cost)
    key = ("barrier", ucc_auto.size_class(0))

    def calls(n: int) -> list[str]:
        start = len(went)
        for _ in range(n):
            reqs, finish, _ = auto.barrier()
            if finish is not None:
                finish()
        return went[start:]

    first = calls(ROUND + 1)
    assert first == ["mpi", "ucc"] * (ROUND // 2) + ["mpi"]  # in turn, then the faster
    state = auto.keys[key]
    assert state.kept == "mpi" and state.keep == KEEP
    assert state.agreed == (1e-5, 2e-5) and len(state.samples["ucc"]) == WARMUP + SAMPLES
    assert calls(KEEP - 1) == ["mpi"] * (KEEP - 1)  # kept: no other library
    cost["ucc"] = 5e-6  # UCC became faster (the link or the load changed)
    again = calls(ROUND + 1)
    assert again[:ROUND] == ["mpi", "ucc"] * (ROUND // 2)  # the round re-times both
    assert again[ROUND] == "ucc" and state.kept == "ucc"  # overturned at its end
    assert state.keep == KEEP  # a change starts the keep anew
    calls(state.keep - 1 + ROUND + 1)  # a round that confirms UCC doubles the keep
    assert state.kept == "ucc" and state.keep == 2 * KEEP
    tail = calls(20_000)
    assert state.keep == MAX_KEEP and state.kept == "ucc"
    share = tail.count("mpi") / len(tail)  # the other library's calls, as the keeps grow
    assert share <= (WARMUP + SAMPLES) / (2 * KEEP), share
    # the kept library's samples come from the same round as the other's: side by side
    assert len(state.samples["mpi"]) == len(state.samples["ucc"]) == WARMUP + SAMPLES


@needs_ucc
@pytest.mark.parametrize(
    ("ranks", "slow"),
    [(2, ()), (3, ("--slow-ucc-on", "1")), (3, ("--slow-mpi-on", "2"))],
)
def test_auto_tries_both_and_every_rank_takes_the_same(
    ranks: int, slow: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MPIUCC_COLLECTIVES=auto: each collective and size class timed on both libraries, then
    one choice on every rank, from the slowest rank's times; MPI's bits on every call."""
    monkeypatch.setenv(transport.ENV, "auto")
    out = run_mpi(SCRIPTS / "check_ucc_auto.py", ranks, *slow, timeout=240)
    assert "ucc auto: passed" in out


@needs_ucc
@pytest.mark.parametrize("choice", ["mpi", "ucc"])
def test_a_gather_block_larger_than_the_roots_output_leaves_the_group_working(
    choice: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One rank's tensor larger than the root's output for it: the root raises on UCC (MPI
    truncates, or raises at the root), every other rank completes, the group goes on."""
    monkeypatch.setenv(transport.ENV, choice)
    assert "oversized gather block: passed" in run_mpi(SCRIPTS / "check_ucc_gather.py", 3)


def test_ucc_without_the_layer_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ucc, "_ucc", None)
    monkeypatch.setattr(ucc, "_why", "the UCC layer was not built (no UCC found at build time)")
    assert not ucc.available() and ucc.version() is None
    with pytest.raises(RuntimeError, match="not built.*build_ucc.sh"):
        transport.resolve("ucc")


@needs_ucc
def test_ucc_with_the_layer() -> None:
    assert transport.resolve("ucc") == "ucc"
    assert transport.resolve("auto") == "auto"
    assert ucc.version().count(".") >= 1


@needs_ucc
@pytest.mark.parametrize(
    ("script", "ranks", "says", "choice"),
    [
        ("check_collectives.py", 2, "collectives: passed", "ucc"),
        ("check_collectives.py", 4, "collectives: passed", "ucc"),
        ("check_subgroups.py", 3, "subgroups: passed", "ucc"),
        ("check_async_p2p.py", 2, "async and point-to-point: passed", "ucc"),
        ("check_ddp.py", 2, "DDP: passed", "ucc"),
        ("check_mesh.py", 2, "passed", "ucc"),  # DeviceMesh, FSDP2 and TP against gloo
        ("check_timeout.py", 3, "timeouts: passed", "ucc"),
        ("check_mismatch.py", 3, "mismatch: passed", "ucc"),
        ("check_collectives.py", 3, "collectives: passed", "auto"),
        ("check_ddp.py", 2, "DDP: passed", "auto"),
    ],
)
def test_backend_suites_with_every_group_on_ucc(
    script: str, ranks: int, says: str, choice: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backend's own checks (against gloo) with MPIUCC_COLLECTIVES=ucc (or auto): every
    group, the world's included, on UCC, the context made over the world."""
    monkeypatch.setenv(transport.ENV, choice)
    assert says in run_mpi(SCRIPTS / script, ranks, timeout=240)


@needs_ucc
@pytest.mark.parametrize("ranks", [2, 4, 8])
def test_torch_suite_on_ucc_groups_as_on_mpi(ranks: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's own distributed suite, every group on UCC (and on auto on 2 ranks), passes
    the same tests as on MPI."""
    pytest.importorskip("expecttest")  # torch.testing._internal imports it
    runner = SCRIPTS.parent / "torch_suite" / "run_suite.py"
    counts = {}
    for choice in ("mpi", "ucc", "auto") if ranks == 2 else ("mpi", "ucc"):
        monkeypatch.setenv(transport.ENV, choice)
        summary = run_mpi(runner, ranks, timeout=420).strip().splitlines()[-1]
        assert " 0 failed" in summary, (choice, summary)
        counts[choice] = summary.split(": ")[1].split(", 0 failed")[0]
    assert all(c == counts["mpi"] for c in counts.values()), counts
