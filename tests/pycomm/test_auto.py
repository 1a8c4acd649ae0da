"""codec="auto": the spec, the choice, the cast bounds, the link figures and the codec cache."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pycodecs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpi_launch import run_mpi

import pycomm
from pycomm.collectives import calibration, cost
from pycomm.collectives.link import FIRST_SECONDS_PER_BYTE, WINDOW, Link
from pycomm.collectives.spec import make_spec

SCRIPTS = Path(__file__).parent / "mpi"
#: Figures of a fast link (shared memory) and a slow one (1 Gbit/s), this CPU's codecs about.
CPU = dict(ebq_fast=1e-9, ebq_dense=4e-9, cast=5e-10, dense_share=0.8)
FAST = cost.Figures(2e-6, 1 / 20e9, **CPU)
SLOW = cost.Figures(50e-6, 1 / 125e6, **CPU)


def choose(fig: cost.Figures, count: int, *, bound: float = 1e-3, top: float = 1.0, **kw):
    args = dict(count=count, dtype=np.dtype(np.float32), ranks=4, mean=True, bound=bound)
    four_ranks = {"fp16": "twophase", "bf16": "twophase"}  # what plan.choose takes for casts
    args.update(
        top=top,
        rank_bound=bound / 8,
        casts=True,
        algorithm_of=lambda name: four_ranks.get(name, "ring"),
    )
    return cost.choose(fig, **{**args, **kw})


# -- the spec --


def test_spec_takes_auto_with_a_contract_or_lossless() -> None:
    assert make_spec("auto").lossless and make_spec("auto:lossless").lossless
    spec = make_spec("auto:rel:1e-3")
    assert spec.auto and not spec.lossless and (spec.mode, spec.error_bound) == ("rel", 1e-3)
    assert make_spec("auto", error_bound=1e-4, mode="rms") == make_spec("auto:rms:1e-4")
    assert pycomm.CodecSpec("auto", error_bound=1e-4).compressed


@pytest.mark.parametrize("text", ["auto:rel", "auto:rel:x", "auto:often:1e-3", "auto:abs:-1"])
def test_spec_refuses_a_bad_contract(text: str) -> None:
    with pytest.raises(ValueError):
        make_spec(text)


def test_auto_names_no_codec_until_resolved() -> None:
    with pytest.raises(ValueError, match="resolved"):
        make_spec("auto:abs:1e-3").codec_kwargs()


# -- the choice --


def test_fast_link_goes_raw_slow_link_compresses() -> None:
    for count in (1 << 14, 1 << 18, 1 << 24):
        assert choose(FAST, count) == "raw"
        assert choose(SLOW, count) in ("ebq_fast", "ebq_dense")


def test_small_messages_stay_raw_on_any_link() -> None:
    assert choose(SLOW, 16) == "raw"


def test_no_bound_room_means_no_cast_and_no_ebq() -> None:
    # A bound below fp16's and bf16's roundings, and no per-rank bound for ebq: raw only.
    assert choose(SLOW, 1 << 20, bound=1e-6, rank_bound=None) == "raw"


def test_a_loose_bound_on_a_slow_link_may_cast_but_never_with_a_residual() -> None:
    fig = cost.Figures(50e-6, 1 / 125e6, 1e-7, 1e-7, 5e-10, 0.8)  # ebq made slow on purpose
    assert choose(fig, 1 << 20, bound=0.05) == "fp16"
    assert choose(fig, 1 << 20, bound=0.05, casts=False) == "raw"


def test_a_cast_that_could_overflow_fp16_is_not_taken() -> None:
    fig = cost.Figures(50e-6, 1 / 125e6, 1e-7, 1e-7, 5e-10, 0.8)
    assert choose(fig, 1 << 20, bound=0.05 * 1e5, top=1e5) == "bf16"


def test_ratio_history_steers_the_level() -> None:
    poor = cost.Figures(*SLOW[:6], ratio_fast=0.9, ratio_dense=0.9)
    # incompressible: not worth the codec time (casts left out: ebq's history is the subject)
    assert choose(poor, 1 << 20, casts=False) == "raw"
    dense = cost.Figures(*SLOW[:6], ratio_fast=0.5, ratio_dense=0.1)
    assert choose(dense, 1 << 22) == "ebq_dense"


def test_single_rank_is_raw() -> None:
    assert choose(SLOW, 1 << 20, ranks=1) == "raw"


# -- the cast bound, against the algorithms' own arithmetic --


def simulated(name: str, xs: np.ndarray, algorithm: str) -> np.ndarray:
    """The sum a cast allreduce computes: each input cast, the decoded values added in rank
    order in float32; "twophase" then casts the sum once more (the chunk owner's frame)."""

    def rounded(v: np.ndarray) -> np.ndarray:
        return pycodecs.decompress(pycodecs.compress(v, name), out=np.empty_like(v))

    acc = np.zeros_like(xs[0])
    for x in xs:
        acc = acc + rounded(x)
    return rounded(acc) if algorithm == "twophase" else acc


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(["fp16", "bf16"]),
    ranks=st.integers(2, 8),
    scale=st.one_of(st.floats(1e-6, 1e3), st.floats(1e36, 3.3e38)),  # near float32's largest
    algorithm=st.sampled_from(cost.CAST_ALGORITHMS),
    seed=st.integers(0, 2**31),
)
def test_cast_error_bounds_the_sum(name, ranks, scale, algorithm, seed) -> None:
    """A cast's proof holds, or there is none: where a partial sum could overflow the cast
    or float32 (bf16 near 3e38 once gave inf on trial calls)."""
    rng = np.random.default_rng(seed)
    # Adversarial: values just off the cast grid, same sign, so that errors line up.
    xs = (scale * (1 + rng.random((ranks, 256)) * 2.0**-9)).astype(np.float32)
    xs[:, ::3] *= rng.choice([-1, 1], size=(ranks, 1)).astype(np.float32)
    top = float(np.abs(xs).max())
    bound = cost.cast_error(name, top, ranks, np.dtype(np.float32), algorithm)
    if bound is None:
        limit = min(cost.CAST_LARGEST[name], float(np.finfo(np.float32).max))
        assert ranks * top * (1 + cost.CAST_ROUNDOFF[name]) ** ranks > limit
        return
    exact = xs.astype(np.float64).sum(0)
    err = np.abs(simulated(name, xs, algorithm).astype(np.float64) - exact).max()
    assert err <= bound, (err, bound)


def test_two_ranks_twophase_casts_twice_and_its_proof_counts_it() -> None:
    """Issue 26, case 5: two ranks' fp16 two-phase sum rounds three times: a proof that
    counted the ring's N(N+1)/2 = 3 roundings of at most top was exceeded (1.93e-3)."""
    xs = np.array([[1.0619945526123047] * 8, [1.0297819375991821] * 8], np.float32)
    top, dtype = float(xs.max()), np.dtype(np.float32)
    exact = xs.astype(np.float64).sum(0)
    err = float(np.abs(simulated("fp16", xs, "twophase").astype(np.float64) - exact).max())
    assert err > 3 * cost.CAST_ROUNDOFF["fp16"] * top  # the ring's count falls short
    assert err <= cost.cast_error("fp16", top, 2, dtype, "twophase")


def test_a_cast_has_no_proof_for_an_algorithm_it_does_not_model() -> None:
    for algorithm in ("ring", "hierarchy"):
        assert cost.cast_error("bf16", 1.0, 4, np.dtype(np.float32), algorithm) is None


@settings(max_examples=100, deadline=None)
@given(top=st.floats(1e-30, 1e30), ranks=st.integers(2, 64), bound=st.floats(1e-30, 1e30))
def test_budget_of_a_mean_never_exceeds_the_sums(top, ranks, bound) -> None:
    dtype = np.dtype(np.float32)
    assert cost.budget(bound, top, ranks, True, dtype) <= bound * ranks


# -- the link --


def test_link_starts_fast_and_learns_a_slow_link() -> None:
    link = Link(2)
    assert link.figures()[1] == FIRST_SECONDS_PER_BYTE
    for _ in range(WINDOW):
        link.add_latency(1e-4)
        link.add_transfer("raw", 1 << 22, (1 << 22) / 125e6)  # 2(N-1)/N = 1 of it moves
    latency, per_byte = link.figures()
    assert latency == pytest.approx(1e-4)
    assert per_byte == pytest.approx(1 / 125e6, rel=0.01)


def test_link_figure_ignores_slow_outliers() -> None:
    link = Link(2)
    for i in range(WINDOW):
        link.add_transfer("raw", 1 << 22, (1 << 22) / 1e9 * (50 if i % 3 == 0 else 1))
    assert link.figures()[1] == pytest.approx(1e-9, rel=0.05)


def test_link_skips_small_transfers_and_can_be_pinned() -> None:
    link = Link(2)
    link.add_transfer("raw", 100, 1.0)
    assert link.figures()[1] == FIRST_SECONDS_PER_BYTE
    link.pin(1e-3, 1e6)
    assert link.figures() == (1e-3, 1e-6)
    link.pin(None)
    assert link.figures()[1] == FIRST_SECONDS_PER_BYTE
    with pytest.raises(ValueError):
        link.pin(1e-3, 0)


def test_small_transfers_bound_the_bandwidth_without_measuring_it() -> None:
    link = Link(2)
    assert link.per_byte_bound() == 0.0  # no bound yet
    for _ in range(4):
        link.add_latency(1e-5)
        link.add_transfer("raw", 1 << 17, 1e-5 + (1 << 17) / 4e9)
    assert link.figures()[1] == FIRST_SECONDS_PER_BYTE  # not the bandwidth
    assert link.per_byte_bound() == pytest.approx(1 / 4e9, rel=0.01)
    link.add_transfer("raw", 1 << 22, (1 << 22) / 1e9)
    assert link.per_byte_bound() == link.figures()[1] == pytest.approx(1e-9, rel=0.01)


# -- the codec speed cache --


def test_codec_speeds_are_measured_once_and_cached(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MPIUCC_CACHE_DIR", str(tmp_path))
    calibration.forget()
    calls = []
    real = calibration.measure
    monkeypatch.setattr(calibration, "measure", lambda: calls.append(1) or real(1 << 14, 1))
    first = calibration.codec_speeds()
    assert set(first) == set(calibration.FIGURES) and all(v > 0 for v in first.values())
    cached = json.loads((tmp_path / "codec_speed.json").read_text())
    assert cached[calibration.machine_key()] == first
    calibration.forget()
    assert calibration.codec_speeds() == first and calls == [1]  # read back, not measured
    calibration.forget()


def test_a_corrupt_cache_is_measured_again(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MPIUCC_CACHE_DIR", str(tmp_path))
    (tmp_path / "codec_speed.json").write_text("{not json")
    calibration.forget()
    monkeypatch.setattr(calibration, "measure", lambda: dict.fromkeys(calibration.FIGURES, 1.0))
    assert calibration.codec_speeds() == dict.fromkeys(calibration.FIGURES, 1.0)
    calibration.forget()


# -- under mpiexec --


@pytest.mark.parametrize("ranks", [2, 3])
def test_auto_under_mpi(ranks: int, tmp_path) -> None:
    """Same decision on every rank under skewed figures; the bound holds whatever is chosen;
    a lossless contract sends no lossy frame."""
    out = run_mpi(SCRIPTS / "check_auto.py", ranks, str(tmp_path), timeout=240)
    assert "auto: passed" in out


def test_agreement_takes_the_fastest_link_and_the_slowest_codecs() -> None:
    a = cost.Figures(1e-5, 1e-9, 1e-9, 2e-9, 1e-10, 0.8, 0.3, 0.2)
    b = cost.Figures(2e-5, 4e-9, 3e-9, 1e-9, 2e-10, 0.7, 0.4, 0.1)
    agreed = cost.Figures.from_agreed(np.maximum(a.agreed_vector(), b.agreed_vector()))
    assert agreed == cost.Figures(1e-5, 1e-9, 3e-9, 2e-9, 2e-10, 0.8, 0.4, 0.2)
    bounded = [f._replace(per_byte_bound=b) for f, b in ((a, 1e-9), (b, 3e-9))]
    vectors = [f.agreed_vector() for f in bounded]
    assert cost.Figures.from_agreed(np.maximum(*vectors)).per_byte_bound == 1e-9
    unbounded = np.maximum(vectors[0], b.agreed_vector())  # a rank without one: none agreed
    assert cost.Figures.from_agreed(unbounded).per_byte_bound == 0.0


def test_measured_overhead_keeps_small_messages_raw_but_not_large_ones() -> None:
    costly = SLOW._replace(over_ebq=0.01, over_cast=0.01)  # 10 ms a compressed call
    assert choose(costly, 1 << 15) == "raw"
    assert choose(costly, 1 << 24) in ("ebq_fast", "ebq_dense")


@settings(max_examples=200, deadline=None)
@given(
    ranks=st.integers(2, 8),
    count=st.integers(1, 4096),
    seed=st.integers(0, 2**31),
    spike=st.floats(0, 1e6),
    bound=st.sampled_from([1e-2, 1e-3, 3e-4]),
    mean=st.booleans(),
)
def test_raw_within_rms_holds_for_any_data(ranks, count, seed, spike, bound, mean) -> None:
    dtype = np.dtype(np.float32)
    if not cost.raw_within_rms(bound, count, ranks, mean, dtype):
        return
    xs = np.random.default_rng(seed).standard_normal((ranks, count)).astype(np.float32)
    xs[:, 0] += np.float32(spike)  # one huge element: the rms follows it, and so the bound
    rms = max(float(np.sqrt(np.mean(r.astype(np.float64) ** 2))) for r in xs)
    acc = xs[0].copy()
    for x in xs[1:]:
        acc = acc + x  # float32 sums, as MPI's
    exact = xs.astype(np.float64).sum(0)
    if mean:
        acc, exact = acc / np.float32(ranks), exact / ranks
    err = np.abs(acc.astype(np.float64) - exact).max()
    assert err <= bound * rms


@settings(max_examples=300, deadline=None)
@given(
    mode=st.sampled_from(["rel", "abs"]),
    bound=st.floats(1e-12, 1e3),
    ranks=st.integers(2, 64),
    mean=st.booleans(),
    wide=st.booleans(),
    scale=st.floats(1e-30, 1e30),
    frac=st.one_of(st.floats(0, 1), st.floats(1 - 1e-6, 1)),  # the edge, most of all
)
def test_raw_proof_is_never_looser_than_the_exact_test(
    mode, bound, ranks, mean, wide, scale, frac
) -> None:
    """What the compiled path tests on the agreed range (``cost.raw_proof``) implies the Python
    path's test (``auto._raw``): any largest |x| (top) and range it passes, up to its very
    edge, the exact test passes too, so both paths sum in the dtype or hand over alike."""
    dtype = np.dtype(np.float64 if wide else np.float32)
    per_range, per_const, largest = cost.raw_proof(mode, bound, ranks, mean, dtype)
    spread = scale if mode == "rel" else 0.0  # the range; any, for an absolute bound
    top = (per_range * spread + per_const) * frac  # at or inside the proof's edge
    if ranks * top > largest or spread > 2 * top:  # past the dtype, or no such data
        return
    e = bound * spread if mode == "rel" else bound
    assert cost.raw_error(top, ranks, dtype) <= cost.budget(e, top, ranks, mean, dtype)


def test_raw_proof_is_tight() -> None:
    """Within a hair of the exact test's largest top: compiled calls are not given up lightly."""
    f32 = np.dtype(np.float32)
    per_range, _, _ = cost.raw_proof("rel", 1e-3, 4, True, f32)
    assert cost.raw_error(per_range * 1.000001, 4, f32) > cost.budget(
        1e-3, per_range * 1.000001, 4, True, f32
    )
    # rms: the compiled path keeps raw on a proof for any data; only overflow is tested
    assert cost.raw_proof("rms", 1e-3, 4, True, f32) == (0.0, float("inf"), cost.largest(f32))


# -- kept decisions: what a call skips, and when it may not --


def flat_algorithm(spec) -> str:
    """What a 2-rank allreduce runs: ebq's ring, a quantizer's allgather."""
    return "ring" if spec.caps.exact_sum else "allgather"


class TwoRanks:
    def Get_size(self) -> int:  # noqa: N802 (mpi4py's name)
        return 2


def lone_engine(bytes_per_s: float):
    """An engine of a 2-rank link pinned at bytes_per_s whose agreement is this rank's own
    values (what two ranks with the same data and figures would agree)."""
    from mpi4py import MPI

    from pycomm.collectives.engine import Engine

    eng = Engine(MPI.COMM_SELF)
    eng.link = Link(2)
    eng.link.pin(50e-6, bytes_per_s)
    eng._reduce_max = lambda doubles, what: None  # the record as this rank sent it
    return eng


def decide(eng, x: np.ndarray, contract: str, times: dict | None = None):
    """One call's choice; ``times``: the seconds each candidate's exchange then takes
    (default: raw 1 s, any other 0.1 s), as the call would time it (``auto_state.ran``)."""
    from pycomm.collectives import auto, auto_state

    choice = auto.agreed_choice(
        eng, TwoRanks(), x, make_spec(contract), "mean", "allreduce", "auto", False, ef=False,
        algorithm_of=flat_algorithm,
    )  # fmt: skip
    times = times or {"raw": 1.0}
    auto_state.ran(eng, choice, times.get(choice.name, 0.1))
    return choice


def settle(eng, x, contract: str, times: dict | None = None):
    """The choice once the key's trials are over, and how many calls they took."""
    from pycomm.collectives import auto_state

    for calls in range(1, 4 * auto_state.CODEC.samples * len(auto_state.CANDIDATES)):
        choice = decide(eng, x, contract, times)
        if observed_entry(eng).kept is not None:
            return choice, calls
    raise AssertionError("never kept a candidate")


def observed_entry(eng):
    from pycomm.collectives import auto_state

    (entry,) = auto_state.observed(eng).keys.values()
    return entry


@pytest.mark.parametrize("contract", ["auto:rel:1e-3", "auto:rel:3e-2", "auto:abs:1e-2"])
def test_a_kept_decision_skips_the_model_until_refresh(contract, monkeypatch) -> None:
    from pycomm.collectives import auto, auto_state

    eng = lone_engine(125e6)  # 1 Gbit/s: compressing pays
    full = []
    real = auto.local_figures
    monkeypatch.setattr(auto, "local_figures", lambda *a: full.append(1) or real(*a))
    x = np.random.default_rng(1).standard_normal(1 << 18).astype(np.float32)
    first, calls = settle(eng, x, contract)
    assert (
        first.name != "raw"
        and len(full) == calls <= (auto.TRIED + 1) * auto_state.CODEC.samples + 1
    )
    for _ in range(observed_entry(eng).keep):
        assert decide(eng, x, contract) == first
    assert len(full) == calls
    decide(eng, x, contract)
    assert len(full) == calls + 1, "a kept decision was never measured again"


@pytest.mark.parametrize(
    "times, kept",
    [
        ({"raw": 1.0}, "compressed"),  # compressing measures 10x faster
        ({"raw": 0.1}, "raw"),  # the model predicts a gain; the measurement says otherwise
        ({"raw": 1.0, "fp16": 0.95, "bf16": 0.95, "ebq_fast": 0.95, "ebq_dense": 0.95}, "raw"),
    ],
)
def test_the_kept_candidate_is_the_fastest_measured(times, kept) -> None:
    """On a link where the model predicts compression pays, the kept candidate follows the
    times alone; a compressed one must beat raw by MARGIN."""
    from pycomm.collectives import auto_state

    eng = lone_engine(125e6)
    x = np.random.default_rng(1).standard_normal(1 << 18).astype(np.float32)
    choice, _ = settle(eng, x, "auto:rel:1e-3", times)
    assert (choice.name == "raw") == (kept == "raw")
    entry = observed_entry(eng)
    assert {len(t) for t in entry.samples.values()} == {auto_state.CODEC.samples}
    assert "raw" in entry.times()


def test_trials_start_with_raw_then_follow_the_model_and_skip_the_hopeless() -> None:
    """A round times raw first; the others to try are chosen after it, by the model with the
    link that call measured (the first call's ranking, made on a guess of the link, finds
    every codec hopeless here), then each of raw and the TRIED best others in turns in the
    model's order; bf16 is hopeless."""
    from pycomm.collectives import auto, auto_state

    entry = auto_state.Seen(7)
    guess = [("raw", 0.1), ("ebq_fast", 1.0), ("fp16", 2.0), ("bf16", 9.0)]
    measured = [("ebq_fast", 1.0), ("fp16", 2.0), ("raw", 3.0), ("bf16", 9.0)]
    order = []
    for call in range(20):
        ranking = guess if call == 0 else measured
        name = auto._next_trial(entry, ranking, [n for n, _ in ranking])
        if name is None:
            break
        order.append(name)
        entry.trial(name)
        entry.measured(name, {"ebq_fast": 0.5, "fp16": 0.4, "raw": 1.0}[name])
    assert order == ["raw", "ebq_fast", "fp16", "ebq_fast", "fp16", "raw"]
    assert entry.decide(entry.times()) == "fp16"


@pytest.mark.parametrize(
    "times, lo, hi",
    [
        ({"raw": 1.0}, 750, 1000),  # compressing 10x faster: raw's re-check costs 0.9 s twice
        ({"raw": 1.0, "fp16": 1.0, "bf16": 1.0, "ebq_fast": 1.0, "ebq_dense": 1.0}, 16, 16),
        ({"raw": 1e-3}, 1024, 1024),  # re-checking compression would cost 100x the pick
    ],
)
def test_a_kept_pick_runs_until_its_recheck_costs_a_bounded_share(times, lo, hi) -> None:
    """The next round of timings comes when its measured excess over the kept pick is
    recheck_share of the kept calls' time (within keep and max_keep), and it does."""

    eng = lone_engine(125e6)
    x = np.random.default_rng(1).standard_normal(1 << 18).astype(np.float32)
    first, _ = settle(eng, x, "auto:rel:1e-3", times)
    entry = observed_entry(eng)
    assert lo <= entry.keep <= hi, entry.keep
    for _ in range(entry.keep):
        assert decide(eng, x, "auto:rel:1e-3", times) == first
    assert entry.current() is None, "kept beyond its refresh"


def test_raw_alone_in_the_running_is_kept_ever_longer() -> None:
    """Where the model found every codec hopeless (a tiny message on a fast link) raw is the
    only candidate timed, and nothing but the full decision is repeated: its interval doubles
    while it keeps raw, up to max_keep, rather than a decision every keep calls."""
    from pycomm.collectives import auto_state

    seen, knobs = auto_state.Seen(7), auto_state.CODEC
    intervals = []
    for _ in range(10):
        seen.decide({"raw": 3e-6})
        intervals.append(seen.keep)
    assert intervals[:4] == [knobs.keep * 2**k for k in range(4)], intervals
    assert intervals[-1] == knobs.max_keep
    seen.decide({"raw": 3e-6, "fp16": 3e-6})  # a second candidate timed alike: re-timed often
    assert seen.keep == knobs.keep


def test_a_changed_decision_is_kept_for_the_first_interval_again() -> None:
    from pycomm.collectives import auto_state

    seen = auto_state.Seen(7)
    for name in ("raw", "raw", "raw"):
        seen.decide({name: 1.0})
    assert seen.keep == 4 * auto_state.CODEC.keep
    seen.decide({"ebq_fast": 1.0})
    assert (seen.keep, seen.last, seen.since, seen.kept) == (
        auto_state.CODEC.keep,
        "ebq_fast",
        0,
        "ebq_fast",
    )
    for _ in range(20):
        seen.decide({"ebq_fast": 1.0})
    assert seen.keep == auto_state.CODEC.max_keep


def test_a_pick_not_kept_does_not_lengthen_the_next_keep() -> None:
    from pycomm.collectives import auto_state

    seen = auto_state.Seen(7)
    for _ in range(5):  # e.g. a link not measured yet: decided in full, never kept
        seen.decide({"raw": 1.0}, hold=lambda pick: False)
    assert (seen.keep, seen.kept, seen.last) == (auto_state.CODEC.keep, None, None)
    seen.decide({"raw": 1.0})
    assert (seen.keep, seen.kept) == (auto_state.CODEC.keep, "raw")


@pytest.mark.parametrize("contract, wide", [("auto:rel:1e-3", True), ("auto:rel:3e-2", False)])
def test_a_kept_decision_the_data_no_longer_prove_gives_way_to_raw(contract, wide) -> None:
    eng = lone_engine(125e6)
    x = np.random.default_rng(2).standard_normal(1 << 18).astype(np.float32)
    first, _ = settle(eng, x, contract)
    assert first.name != "raw"
    # An offset of 1e6 leaves a range that neither ebq's grid nor a cast can keep (nor fp16
    # at all): raw, summed in float64 where float32's roundings could exceed the bound, then
    # a full decision on the next call (from the times measured).
    shifted = decide(eng, x + np.float32(1e6), contract)
    assert shifted.name == "raw" and (shifted.spec.codec == "ebq") == wide
    assert decide(eng, x, contract) == first


def test_one_rank_takes_raw_without_statistics(monkeypatch) -> None:
    from mpi4py import MPI

    from pycomm.collectives import auto, bound
    from pycomm.collectives.engine import Engine

    monkeypatch.setattr(bound, "local_statistics", lambda *a: pytest.fail("a data pass"))
    x = np.ones(1000, np.float32)
    got = auto.agreed_choice(
        Engine(MPI.COMM_SELF), MPI.COMM_SELF, x, make_spec("auto:rel:1e-3"), "sum",
        "allreduce", ef=False, algorithm_of=flat_algorithm,
    )  # fmt: skip
    assert got.name == "raw" and got.spec.codec == "none"


def test_noise_cannot_make_compressing_look_faster() -> None:
    """Of a round's times raw keeps its least, a compressed candidate its most: one lucky
    compressed call beside a slow raw one does not win."""
    from pycomm.collectives import auto, auto_state

    entry = auto_state.Seen(7)
    entry.plan(("raw", "ebq_fast"))
    for name, seconds in [("ebq_fast", 0.5), ("raw", 1.2), ("ebq_fast", 1.0), ("raw", 1.0)]:
        entry.trial(name)
        entry.measured(name, seconds)
    assert entry.times() == {"ebq_fast": 1.0, "raw": 1.0}
    ranking = [("ebq_fast", 1.0), ("raw", 2.0)]
    assert auto._next_trial(entry, ranking, ["ebq_fast", "raw"]) is None
    assert entry.decide(entry.times()) == "raw"
