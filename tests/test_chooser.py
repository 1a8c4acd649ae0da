"""The one chooser (``pycomm.chooser``): rounds, keeps, strikes and the agreed token, for each
row of its knobs."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycomm.chooser import KNOBS, Chooser

CODEC, LIBRARY = KNOBS["codec"], KNOBS["library"]


def timed_round(chooser: Chooser, seconds: dict[str, list[float]]) -> list[str]:
    """Run one round to its end with each candidate's successive times; the order tried."""
    left = {name: list(times) for name, times in seconds.items()}
    order = []
    while (name := chooser.next_trial()) is not None:
        order.append(name)
        chooser.trial(name)
        chooser.measured(name, left[name].pop(0))
    return order


def test_a_round_takes_turns_and_ends_with_every_sample() -> None:
    c = Chooser(LIBRARY, ("mpi", "ucc"))
    c.new_round(("mpi", "ucc"))
    per = LIBRARY.warmup + LIBRARY.samples
    order = timed_round(c, {"mpi": [9.0, 1.0, 2.0, 3.0], "ucc": [9.0, 5.0, 6.0, 7.0]})
    assert order == ["mpi", "ucc"] * per
    assert c.times() == {"mpi": 2.0, "ucc": 6.0}  # medians, the warm-up left out


def test_guarded_times_cannot_make_another_look_faster_than_the_default() -> None:
    """The default keeps its least sample, any other its most."""
    c = Chooser(CODEC, ("raw", "fp16"))
    c.new_round(("raw", "fp16"))
    timed_round(c, {"raw": [1.2, 1.0], "fp16": [0.5, 1.0]})
    assert c.times() == {"raw": 1.0, "fp16": 1.0}
    assert c.decide(c.times()) == "raw"


@pytest.mark.parametrize(("other", "kept"), [(0.89, "fp16"), (0.9, "raw"), (0.95, "raw")])
def test_another_must_beat_the_default_by_the_margin(other: float, kept: str) -> None:
    c = Chooser(CODEC, ("raw", "fp16"))
    c.new_round(("raw", "fp16"))
    assert c.decide({"raw": 1.0, "fp16": other}) == kept


def test_the_keep_follows_the_recheck_share_within_its_bounds() -> None:
    c = Chooser(CODEC, ("raw", "fp16"))
    c.new_round(("raw", "fp16"))
    c.decide({"raw": 1.0, "fp16": 1.1})  # excess 2 x 0.1 s = 2% of 10 calls: the floor
    assert c.keep == CODEC.keep
    c.decide({"raw": 1.0, "fp16": 3.0})  # 2 x 2 s = 2% of 200 calls
    assert c.keep == 200
    c.decide({"raw": 1.0, "fp16": 100.0})
    assert c.keep == CODEC.max_keep


def test_a_lone_candidate_is_kept_ever_longer_and_a_new_pick_starts_again() -> None:
    c = Chooser(LIBRARY, ("mpi", "ucc"))
    keeps = []
    for _ in range(8):
        c.decide({"mpi": 1.0, "ucc": 2.0})
        keeps.append(c.keep)
    assert keeps[:3] == [LIBRARY.keep, 2 * LIBRARY.keep, 4 * LIBRARY.keep]
    assert keeps[-1] == LIBRARY.max_keep
    c.decide({"mpi": 2.0, "ucc": 1.0})
    assert (c.kept, c.keep) == ("ucc", LIBRARY.keep)


def test_a_pick_slower_than_the_runner_up_gives_way_with_its_own_time() -> None:
    c = Chooser(CODEC, ("raw", "fp16", "ebq_fast"))
    c.new_round(("raw", "fp16", "ebq_fast"))
    timed_round(c, {"raw": [1.0, 1.0], "fp16": [0.5, 0.5], "ebq_fast": [0.7, 0.7]})
    assert c.decide(c.times()) == "fp16" and c.give_up == 0.7
    for seconds in (0.9, 0.8, 0.85):
        c.since += 1
        c.recent.append(seconds)
    assert c.kept_time() == 0.8 > c.give_up
    c.slower(c.kept_time())
    assert c.current() is None and c.times()["fp16"] == 0.8
    assert c.decide(c.times()) == "ebq_fast"


def test_strikes_off_never_give_way() -> None:
    c = Chooser(LIBRARY, ("mpi", "ucc"))
    c.decide({"mpi": 1.0, "ucc": 2.0})
    assert c.give_up == float("inf") and c.kept_time() == 0.0


def test_hold_false_decides_again_at_the_next_call() -> None:
    c = Chooser(CODEC, ("raw",))
    c.decide({"raw": 1.0}, hold=lambda pick: False)
    assert (c.kept, c.last, c.current()) == (None, None, None)


@settings(max_examples=200, deadline=None)
@given(
    a=st.tuples(st.integers(0, 1023), st.integers(1, 1024), st.integers(0, 5000)),
    b=st.tuples(st.integers(0, 1023), st.integers(1, 1024), st.integers(0, 5000)),
    picks=st.tuples(*[st.sampled_from([None, "raw", "fp16", "ebq_dense"])] * 3),
)
def test_the_token_is_exact_and_tells_states_apart(a, b, picks) -> None:
    """Equal states give equal tokens, states that differ in any agreed field differ (the
    count of samples modulo 1024), and every token is an exact integer in a double."""
    names = ("raw", "fp16", "bf16", "ebq_fast", "ebq_dense")

    def state(since: int, keep: int, timed: int, kept, last, trying) -> Chooser:
        c = Chooser(CODEC, names)
        c.since, c.keep, c.timed, c.kept, c.last, c.trying = since, keep, timed, kept, last, trying
        return c

    x, y = state(*a, *picks), state(*b, *picks)
    tx, ty = x.token(), y.token()
    assert tx == int(tx) and tx < 2**53
    same = (x.since, x.keep, x.timed % 1024, x.current()) == (
        y.since,
        y.keep,
        y.timed % 1024,
        y.current(),
    )
    assert (tx == ty) == same


def test_the_knobs_are_one_frozen_table() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        CODEC.keep = 1  # type: ignore[misc]
    assert set(KNOBS) == {"codec", "library"}
