"""The store's wire format: every operation round-trips; any bytes decode or raise WireError."""

import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("torch")
pytest.importorskip("mpi4py")

from pycomm.distributed import _store_wire as wire  # noqa: E402
from pycomm.distributed._store_wire import Op, WireError  # noqa: E402

keys = st.text(max_size=20)
values = st.binary(max_size=64)
key_lists = st.lists(keys, max_size=5)
ARGS = {
    Op.SET: st.tuples(keys, values),
    Op.APPEND: st.tuples(keys, values),
    Op.ADD: st.tuples(keys, st.integers(-(2**63), 2**63 - 1)),
    Op.CAS: st.tuples(keys, values, values),
    Op.GET: st.tuples(st.lists(keys, min_size=1, max_size=1)),
    Op.MGET: st.tuples(key_lists),
    Op.WAIT: st.tuples(key_lists),
    Op.CHECK: st.tuples(key_lists),
    Op.MSET: st.lists(st.tuples(keys, values), max_size=5).map(
        lambda kv: ([k for k, _ in kv], [v for _, v in kv])
    ),
    Op.DEL: st.tuples(keys),
    Op.NUM: st.just(()),
}
requests = st.sampled_from(list(Op)).flatmap(lambda op: st.tuples(st.just(op), ARGS[op]))
tags = st.integers(wire.FIRST_REPLY_TAG, wire.FIRST_REPLY_TAG + wire.REPLY_TAGS - 1)


@given(requests, tags, st.integers(0, 2**32 - 1), st.floats(0, 1e9))
def test_every_request_round_trips(request, tag, rid, timeout) -> None:
    op, args = request
    req = wire.decode_request(wire.encode_request(op, tag, rid, timeout, args))
    assert (req.op, req.tag, req.rid, req.timeout) == (op, tag, rid, timeout)
    assert wire.parse_args(req) == (op, tuple(args))


RESULTS = {
    Op.GET: values,
    Op.CAS: values,
    Op.MGET: st.lists(values, max_size=5),
    Op.ADD: st.integers(-(2**63), 2**63 - 1),
    Op.NUM: st.integers(0, 2**63 - 1),
    Op.CHECK: st.booleans(),
    Op.DEL: st.booleans(),
    Op.SET: st.none(),
    Op.WAIT: st.none(),
}


@given(st.sampled_from(list(RESULTS)).flatmap(lambda op: st.tuples(st.just(op), RESULTS[op])))
def test_every_reply_round_trips(reply) -> None:
    op, value = reply
    rid, ok, parts = wire.decode_reply(wire.encode_reply(17, op, value))
    assert (rid, ok, wire.result(op, parts)) == (17, True, value)
    rid, ok, parts = wire.decode_reply(wire.encode_error(18, "no such luck"))
    assert (rid, ok, wire.error_text(parts)) == (18, False, "no such luck")


def _decode_any(raw: bytes) -> None:
    """Decoding untrusted bytes either succeeds or raises WireError: nothing else."""
    try:
        wire.parse_args(wire.decode_request(raw))
    except WireError:
        pass
    try:
        wire.decode_reply(raw)
    except WireError:
        pass


@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_raise_wire_error(raw: bytes) -> None:
    _decode_any(raw)


@given(requests, st.data())
def test_corrupted_requests_decode_or_raise_wire_error(request, data) -> None:
    op, args = request
    raw = bytearray(wire.encode_request(op, 5, 1, 1.0, args))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    _decode_any(bytes(raw[:cut]))
    _decode_any(bytes(raw))


@pytest.mark.parametrize("timeout", [math.nan, math.inf, -1.0])
def test_a_timeout_that_is_not_a_duration_is_refused(timeout: float) -> None:
    raw = struct.pack("<BBHIdI", 1, Op.GET, 5, 1, timeout, 1) + struct.pack("<I", 1) + b"k"
    with pytest.raises(WireError, match="timeout"):
        wire.parse_args(wire.decode_request(raw))


def test_a_pickle_is_not_a_request() -> None:
    import pickle

    with pytest.raises(WireError, match="version"):
        wire.decode_request(pickle.dumps(("get", (["k"],), 5, 1.0)))
