"""The accuracy guard: relative errors, the decision over a threshold, the tightening ladder."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("mpi4py")

import pycomm  # noqa: E402
from pycomm.train.config import parse_codec  # noqa: E402
from pycomm.train.guard import SMALLEST_BOUND, THRESHOLDS, ErrorSample, Guard, tightened  # noqa: E402


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=64),
    st.floats(1e-6, 1e-1),
    st.integers(0, 2**31),
)
def test_error_sample_is_the_norm_ratio(values: list, scale: float, seed: int) -> None:
    exact = np.array(values)
    noise = np.random.default_rng(seed).standard_normal(exact.size) * scale
    s = ErrorSample()
    got = exact + noise
    s.add(torch.tensor(got), exact)
    assert s.err2 == pytest.approx(float(np.sum((got - exact) ** 2)), rel=1e-9, abs=1e-300)
    assert s.norm2 == pytest.approx(float(np.sum(exact**2)), rel=1e-9)


def test_tightening_divides_ebq_bounds_and_makes_quantizers_exact() -> None:
    spec = parse_codec("ebq:rel:1e-2:level=dense")
    tighter = tightened(spec)
    assert tighter.error_bound == pytest.approx(2.5e-3) and tighter.level == "dense"
    assert tightened(parse_codec(f"ebq:abs:{SMALLEST_BOUND}")).error_bound == SMALLEST_BOUND
    assert tightened(parse_codec("int8")) == pycomm.CodecSpec()


def _guard(every: int = 2) -> tuple[Guard, dict, list]:
    specs = {"tp_fwd": parse_codec("ebq:rel:3e-3"), "dp": parse_codec("int4")}
    streams = {k: (lambda k=k: specs[k], lambda s, k=k: specs.__setitem__(k, s)) for k in specs}
    logged: list[str] = []
    return Guard(streams, every, logged.append), specs, logged


def test_guard_tightens_only_streams_over_their_threshold() -> None:
    guard, specs, logged = _guard()
    guard.begin_step(0)
    assert guard.sampling and guard.sample("pp") is None  # not a stream of this run
    exact = np.ones(100)
    guard.sample("tp_fwd").add(exact * (1 + 2 * THRESHOLDS["tp_fwd"]), exact)
    guard.sample("dp").add(exact * (1 + THRESHOLDS["dp"] / 2), exact)
    guard.end_step(0)
    assert specs["tp_fwd"].error_bound == pytest.approx(3e-3 / 4)
    assert specs["dp"] == parse_codec("int4")
    assert logged == guard.events and len(logged) == 1
    limit = f"{100 * THRESHOLDS['tp_fwd']:g}%"
    error = f"{200 * THRESHOLDS['tp_fwd']:.2f}%"
    want = f"tp_fwd error {error} > {limit}: ebq:rel:0.003 -> ebq:rel:0.00075"
    assert want in logged[0], logged
    step, errors = guard.history[0]
    assert step == 1 and errors["dp"] == pytest.approx(THRESHOLDS["dp"] / 2)
    guard.begin_step(1)  # not a sampled step: nothing measured
    assert not guard.sampling and guard.sample("tp_fwd") is None
    summary = guard.summary()
    assert summary["tp_fwd"]["samples"] == 1 and summary["tp_fwd"]["codec"] == "ebq:rel:0.00075"
    guard.close()


def test_guard_off_samples_nothing() -> None:
    guard, _, _ = _guard(every=0)
    guard.begin_step(0)
    assert guard.sample("tp_fwd") is None
    guard.end_step(0)
    assert guard.history == []
    guard.close()
