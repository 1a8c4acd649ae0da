"""plan.choose: which algorithm an allreduce takes, from the bytes and messages each would send
(fixed-size codecs), and the element rule of ebq."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pycodecs.capabilities import CAPABILITIES

from pycomm.collectives import plan
from pycomm.collectives.plan import MIN_CHUNK_COUNT, choose, exchange, exchange_cost
from pycomm.collectives.spec import make_spec

FIXED = [name for name, caps in CAPABILITIES.items() if caps.fixed_size]  # the quantizers
BUCKET = 3_250_000  # the DDP bench's bucket (BENCHMARKS, "Compression at scale")
HOOK_SEGMENT = 1 << 19


def spec(codec: str):
    return make_spec(codec, **({"levels": 8} if codec in ("qsgd", "topk") else {}))


def test_sign_at_four_ranks_takes_the_allgather_its_small_frames_favour() -> None:
    """sign's 74 KB frame per hook segment: twophase would save 37 KB for 3 more messages."""
    assert choose(spec("sign"), 4, BUCKET, segment=HOOK_SEGMENT) == "allgather"
    assert choose(spec("int8"), 4, BUCKET, segment=HOOK_SEGMENT) == "twophase"
    # whole 2^21-element segments: frames 4x larger, a quarter of the messages
    assert choose(spec("sign"), 4, BUCKET, segment=1 << 21) == "twophase"


@pytest.mark.parametrize("codec", FIXED)
def test_two_ranks_never_take_twophase(codec: str) -> None:
    for count in (1, 1 << 14, 1 << 22):
        assert choose(spec(codec), 2, count) == "allgather"


@pytest.mark.parametrize("codec", FIXED)
def test_twophase_sends_fewer_bytes_in_more_messages(codec: str) -> None:
    for size in (3, 4, 8, 64):
        tp = exchange("twophase", spec(codec), size, 1 << 20, "float32", 1 << 19)
        ag = exchange("allgather", spec(codec), size, 1 << 20, "float32", 1 << 19)
        assert tp[0] < ag[0] and tp[1] == ag[1] + 2 * (size - 1), (size, tp, ag)


@settings(max_examples=80, deadline=None)
@given(
    codec=st.sampled_from(FIXED),
    size=st.integers(3, 64),
    count=st.integers(0, 1 << 21),
    more=st.integers(0, 1 << 21),
    dtype=st.sampled_from(["float32", "float64", "float16"]),
)
def test_the_choice_only_turns_to_twophase_as_a_segment_grows(codec, size, count, more, dtype):
    """Within one segment, a larger count never goes back to the allgather; the choice is the
    cheaper of the two costs, the allgather on a tie."""
    segment = 1 << 22
    first = choose(spec(codec), size, count, dtype=dtype, segment=segment)
    later = choose(spec(codec), size, count + more, dtype=dtype, segment=segment)
    assert not (first == "twophase" and later == "allgather"), (first, later)
    costs = [exchange_cost(n, spec(codec), size, count, dtype, segment) for n in plan.FIXED]
    assert first == ("twophase" if costs[0] < costs[1] else "allgather")


def test_without_a_message_cost_fewer_bytes_win(monkeypatch) -> None:
    monkeypatch.setattr(plan, "MESSAGE_BYTES", 0)
    assert choose(spec("sign"), 4, BUCKET, segment=HOOK_SEGMENT) == "twophase"
    assert choose(spec("int8"), 3, 4096) == "twophase"


def test_ebq_keeps_its_element_rule_and_an_asked_algorithm_wins() -> None:
    ebq = make_spec("ebq", error_bound=1e-3)
    assert choose(ebq, 2, 2 * MIN_CHUNK_COUNT) == "ring"
    assert choose(ebq, 8, 8 * MIN_CHUNK_COUNT - 1) == "allgather"
    assert choose(spec("sign"), 4, BUCKET, "twophase", segment=HOOK_SEGMENT) == "twophase"


@pytest.mark.parametrize("ranks", [64, 256, 2048])
def test_ebq_on_many_ranks_takes_the_ring_where_whole_frames_would_cost_more(ranks) -> None:
    ebq = make_spec("ebq", error_bound=1e-3)
    count = (ranks * MIN_CHUNK_COUNT) // 2  # each chunk small, the frames not
    assert plan.gathered_bytes_too_many(ranks, count, "float32", 1 << 21)
    assert choose(ebq, ranks, count) == "ring"
    assert choose(ebq, ranks, ranks) == "allgather"  # one element each: latency rules
    for small in (2, 3, 8):  # the element rule alone, as measured on few ranks
        assert choose(ebq, small, small * MIN_CHUNK_COUNT - 1) == "allgather"


def test_exchange_refuses_an_algorithm_it_does_not_weigh() -> None:
    with pytest.raises(ValueError, match="ring"):
        exchange("ring", spec("int8"), 4, 1000, "float32", 1 << 21)
