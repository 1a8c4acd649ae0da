"""Posted receives matched by probe: a message never lands in a buffer smaller than itself.

Open MPI 5 over UCX writes a large message that is longer than its posted receive past that
receive's buffer (MPICH raises ``MPI_ERR_TRUNCATE`` and writes nothing). So pycomm posts no
``Irecv`` whose size comes from the receiver: a receive (``Slot``) waits in its communicator's
``Inbox`` until a matched probe (``Improbe``) finds its message, then takes the message whole
into a buffer of the probed size (``Imrecv``); the caller checks the size before anything
reaches its own buffer.

MPI's matching order is kept: the pending slots form one FIFO per communicator, and a message
goes to the earliest pending slot whose (source, tag) pattern matches it, ``ANY_SOURCE`` and
``ANY_TAG`` included. A slot overlapped by an earlier pending one first looks (``Iprobe``) and
takes the message only if no earlier slot could match it; ``Improbe`` returns a source's
messages in the order sent, so no message overtakes another of the same sender.

Slots have ``Test(status)`` and ``Cancel()``, so ``Posted`` drives them as MPI requests. Pending
slots progress only where somebody sweeps the inbox: their waiter, or the engine's thread (each
posted receive is watched), so that "irecv, isend, wait for the send" does not deadlock.

Where this differs from a posted ``Irecv``: a receive still unmatched when its communicator is
freed fails (MPI would still match it; nothing can be probed on a freed communicator, and MPI
allows no new request inside the free), and an oversized message costs a buffer of its size.
"""

from __future__ import annotations

import threading

from mpi4py import MPI

_ANY_SOURCE, _ANY_TAG = MPI.ANY_SOURCE, MPI.ANY_TAG


class Slot:
    """One posted receive: pending in its inbox until a probe matches it, then an ``Imrecv``
    into a buffer of exactly the message's size (``message()``)."""

    __slots__ = ("_inbox", "source", "tag", "_buffer", "_req", "_failure")

    def __init__(self, inbox: Inbox, source: int, tag: int) -> None:
        self._inbox, self.source, self.tag = inbox, source, tag
        self._buffer: bytearray | None = None
        self._req: MPI.Request | None = None
        self._failure: str | None = None

    def matches(self, source: int, tag: int) -> bool:
        """Whether a message from ``source`` with ``tag`` matches this receive."""
        return self.source in (_ANY_SOURCE, source) and self.tag in (_ANY_TAG, tag)

    def overlaps(self, other: Slot) -> bool:
        """Whether some message could match both receives."""
        s, t = (self.source, other.source), (self.tag, other.tag)
        return (_ANY_SOURCE in s or s[0] == s[1]) and (_ANY_TAG in t or t[0] == t[1])

    def Test(self, status: MPI.Status | None = None) -> bool:  # noqa: N802 (MPI.Request's)
        """True once the message is in its buffer (``status``: its source, tag and size), or
        the receive failed (``message()`` raises)."""
        if self._req is None:
            if self._failure is not None:
                return True
            self._inbox.sweep()
            if self._req is None:
                return self._failure is not None
        return self._req.Test(status)

    def Cancel(self) -> None:  # noqa: N802 (MPI.Request's)
        """Withdraw a pending receive; a matched one is cancelled in MPI (which may refuse)."""
        if self._inbox.withdraw(self):
            self._failure = "it was cancelled"
        elif self._req is not None:
            self._req.Cancel()

    def message(self) -> bytearray:
        """The received message, once ``Test`` said so; raises if the receive failed."""
        if self._buffer is None:
            raise RuntimeError(
                f"pycomm: a receive from {_who(self.source)} got no message: {self._failure}"
            )
        return self._buffer

    def _take(self, msg: MPI.Message, count: int) -> None:
        self._buffer = bytearray(count)
        self._req = msg.Irecv([self._buffer, MPI.BYTE])


class Inbox:
    """The pending probe-matched receives of one communicator, in posting order."""

    def __init__(self, comm: MPI.Comm) -> None:
        self.comm = comm
        self._pending: list[Slot] = []
        self._lock = threading.Lock()
        self._closed = False

    def post(self, source: int, tag: int) -> Slot:
        """A receive from ``source`` with ``tag``, after every receive posted before it."""
        slot = Slot(self, source, tag)
        with self._lock:
            if self._closed:
                raise RuntimeError("pycomm: a receive on a freed communicator")
            self._pending.append(slot)
        self.sweep()  # a message already here is matched now (not tested: Test's status)
        return slot

    def sweep(self) -> None:
        """Match what has arrived to the pending slots, earliest slot first (never blocks: a
        sweep already running elsewhere does the work)."""
        if not self._lock.acquire(False):
            return
        try:
            still: list[Slot] = []
            for slot in list(self._pending):
                if self._match(slot, still):
                    self._pending.remove(slot)
                else:
                    still.append(slot)
        except MPI.Exception:
            if self.comm != MPI.COMM_NULL:
                raise
            self._fail_pending()  # mpi4py's Free nulls the handle before the delete callback
        finally:
            self._lock.release()

    def _match(self, slot: Slot, earlier: list[Slot]) -> bool:
        status = MPI.Status()
        source, tag = slot.source, slot.tag
        if any(e.overlaps(slot) for e in earlier):
            if not self.comm.Iprobe(source, tag, status):
                return False
            source, tag = status.Get_source(), status.Get_tag()
            if any(e.matches(source, tag) for e in earlier):
                return False  # that message is an earlier slot's
        msg = self.comm.Improbe(source, tag, status)
        if msg is None:
            return False
        slot._take(msg, status.Get_count(MPI.BYTE))
        return True

    def withdraw(self, slot: Slot) -> bool:
        """Remove a pending slot; False if it was matched already."""
        with self._lock:
            if slot in self._pending:
                self._pending.remove(slot)
                return True
        return False

    def pending(self) -> int:
        """How many receives wait for a message."""
        return len(self._pending)

    def close(self) -> None:
        """The communicator is being freed: a pending receive can no longer be matched (MPI
        allows no new request in the free's callback), so it fails. Matched ones complete."""
        with self._lock:
            self._fail_pending()

    def _fail_pending(self) -> None:
        self._closed = True
        pending, self._pending = self._pending, []
        for slot in pending:
            slot._failure = "its communicator was freed first"


def _who(source: int) -> str:
    return "any rank" if source == _ANY_SOURCE else f"rank {source}"
