"""The inbox's probe-matched receives follow MPI's matching rules (no mpiexec: a scripted
communicator decides when each message becomes visible, even in the middle of a sweep).

The reference is MPI's rule itself: an arriving message goes to the earliest posted receive
still pending that matches it, else waits; a posted receive takes the earliest waiting message
that matches it, else waits.
"""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from mpi4py import MPI

from pycomm.collectives.inbox import Inbox

ANY_S, ANY_T = MPI.ANY_SOURCE, MPI.ANY_TAG


def _matches(pattern: tuple[int, int], msg: tuple[int, int]) -> bool:
    return pattern[0] in (ANY_S, msg[0]) and pattern[1] in (ANY_T, msg[1])


class _Done:
    """A completed receive: the message's id lands in the buffer."""

    def __init__(self, buf: bytearray, msg: tuple[int, int, int]) -> None:
        struct.pack_into("<q", buf, 0, msg[2])
        self._msg = msg

    def Test(self, status: MPI.Status | None = None) -> bool:  # noqa: N802
        if status is not None:
            _fill(status, self._msg)
        return True


class _Message:
    def __init__(self, msg: tuple[int, int, int]) -> None:
        self._msg = msg

    def Irecv(self, spec: list) -> _Done:  # noqa: N802
        return _Done(spec[0], self._msg)


def _fill(status: MPI.Status, msg: tuple[int, int, int]) -> None:
    status.Set_source(msg[0])
    status.Set_tag(msg[1])
    status.Set_elements(MPI.BYTE, 8)


class ScriptedComm:
    """Messages (source, tag, id) become visible when scheduled: at once, or after so many
    more probe calls (in the middle of a sweep); ``log`` records posts and arrivals in order."""

    def __init__(self) -> None:
        self.arrived: list[tuple[int, int, int]] = []
        self.scheduled: list[tuple[int, tuple[int, int, int]]] = []
        self.log: list[tuple[str, object]] = []

    def send(self, msg: tuple[int, int, int], after_probes: int) -> None:
        if after_probes == 0:
            self._arrive(msg)
        else:
            self.scheduled.append((after_probes, msg))

    def flush(self) -> None:
        while self.scheduled:
            self._arrive(self.scheduled.pop(0)[1])

    def _arrive(self, msg: tuple[int, int, int]) -> None:
        self.arrived.append(msg)
        self.log.append(("arrive", msg))

    def _tick(self) -> None:
        due = [m for k, m in self.scheduled if k <= 1]
        self.scheduled = [(k - 1, m) for k, m in self.scheduled if k > 1]
        for m in due:
            self._arrive(m)

    def _first(self, source: int, tag: int) -> tuple[int, int, int] | None:
        return next((m for m in self.arrived if _matches((source, tag), m[:2])), None)

    def Iprobe(self, source: int, tag: int, status: MPI.Status) -> bool:  # noqa: N802
        found = self._first(source, tag)
        if found is not None:
            _fill(status, found)
        self._tick()
        return found is not None

    def Improbe(self, source: int, tag: int, status: MPI.Status) -> _Message | None:  # noqa: N802
        found = self._first(source, tag)
        if found is not None:
            self.arrived.remove(found)
            _fill(status, found)
        self._tick()
        return None if found is None else _Message(found)


def mpi_reference(log: list[tuple[str, object]]) -> dict[int, int]:
    """Receive number -> message id under MPI's rules, replaying posts and arrivals in order."""
    posted: list[tuple[int, tuple[int, int]]] = []
    waiting: list[tuple[int, int, int]] = []
    got: dict[int, int] = {}
    for kind, what in log:
        if kind == "post":
            number, pattern = what
            m = next((m for m in waiting if _matches(pattern, m[:2])), None)
            if m is None:
                posted.append((number, pattern))
            else:
                waiting.remove(m)
                got[number] = m[2]
        else:
            r = next((r for r in posted if _matches(r[1], what[:2])), None)
            if r is None:
                waiting.append(what)
            else:
                posted.remove(r)
                got[r[0]] = what[2]
    return got


def received(slot) -> int | None:
    if not slot.Test():
        return None
    return struct.unpack_from("<q", slot.message())[0]


def run(events: list) -> tuple[dict[int, int], dict[int, int]]:
    comm = ScriptedComm()
    inbox = Inbox(comm)
    slots = []
    sent = 0
    for kind, pattern, after in events:
        if kind == "post":
            comm.log.append(("post", (len(slots), pattern)))
            slots.append(inbox.post(*pattern))
        elif kind == "send":
            comm.send((*pattern, sent), after)
            sent += 1
        else:
            inbox.sweep()
    comm.flush()
    for _ in range(len(slots) + 1):
        inbox.sweep()
    got = {i: m for i, s in enumerate(slots) if (m := received(s)) is not None}
    return got, mpi_reference(comm.log)


def test_a_message_visible_mid_sweep_goes_to_the_earliest_matching_receive() -> None:
    # r0 wants tag 5 from anyone, r1 anything from rank 0. Rank 0's tag-5 message becomes
    # visible after r0's probe and before r1's: it is still r0's (r1 takes the next one).
    events = [
        ("post", (ANY_S, 5), 0),
        ("post", (0, ANY_T), 0),
        ("send", (0, 5), 1),
        ("send", (0, 6), 3),
        ("sweep", None, 0),
    ]
    got, want = run(events)
    assert want == {0: 0, 1: 1}
    assert got == want


def test_a_sender_s_messages_are_taken_in_the_order_sent() -> None:
    events = [("send", (1, 7), 0), ("send", (1, 7), 0), ("post", (1, ANY_T), 0)]
    events += [("post", (ANY_S, 7), 0)]
    got, want = run(events)
    assert got == want == {0: 0, 1: 1}


_patterns = st.tuples(st.sampled_from([ANY_S, 0, 1]), st.sampled_from([ANY_T, 5, 6]))
_messages = st.tuples(st.sampled_from([0, 1]), st.sampled_from([5, 6]))
_events = st.lists(
    st.one_of(
        st.tuples(st.just("post"), _patterns, st.just(0)),
        st.tuples(st.just("send"), _messages, st.integers(0, 4)),
        st.tuples(st.just("sweep"), st.none(), st.just(0)),
    ),
    max_size=24,
)


@settings(max_examples=300, deadline=None)
@given(_events)
def test_matching_equals_mpi_s_rules(events: list) -> None:
    got, want = run(events)
    assert got == want


def test_a_cancelled_receive_leaves_its_message_to_the_next() -> None:
    comm = ScriptedComm()
    inbox = Inbox(comm)
    first, second = inbox.post(0, 5), inbox.post(ANY_S, 5)
    first.Cancel()
    comm.send((0, 5, 42), 0)
    inbox.sweep()
    assert first.Test() and received(second) == 42
    try:
        first.message()
    except RuntimeError as exc:
        assert "cancelled" in str(exc)
    else:
        raise AssertionError("a cancelled receive returned a message")


def test_a_receive_pending_when_its_communicator_is_freed_fails() -> None:
    comm = ScriptedComm()
    inbox = Inbox(comm)
    slot = inbox.post(1, 3)
    inbox.close()
    assert slot.Test()
    try:
        slot.message()
    except RuntimeError as exc:
        assert "freed first" in str(exc)
    else:
        raise AssertionError("a receive on a freed communicator returned a message")
    try:
        inbox.post(1, 3)
    except RuntimeError as exc:
        assert "freed communicator" in str(exc)
    else:
        raise AssertionError("a receive was posted on a freed communicator")
