"""Moving frames between ranks: every received frame is checked before it is decoded.

A frame from another rank is untrusted. Its size is checked against the largest frame the
expected codec can make of the expected count (sizes announced in advance: before anything is
allocated; a larger message is taken off the wire whole and refused, since a receive smaller
than its message is not safe everywhere: Open MPI 5 over UCX writes past it), and its header
is checked against what this rank expects (codec, dtype, count) before any decode.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pycodecs
from mpi4py import MPI
from pycodecs.capabilities import CAPABILITIES

from pycomm.collectives.engine import Engine
from pycomm.collectives.spec import AUTO_CODECS, CodecSpec, ebq_spec
from pycomm.collectives.stats import CommStats
from pycomm.collectives.waits import SettingsMismatchError

GATHER_TAG = 0x5C1
SCATTER_TAG = 0x5C2


@dataclass(frozen=True)
class Expect:
    """What a received frame must be: made by ``kw`` (pycodecs.compress keywords) of
    ``count`` elements of ``dtype``."""

    kw: dict
    dtype: str
    count: int

    @property
    def codec(self) -> str:
        return self.kw["codec"]

    @property
    def fixed_size(self) -> bool:
        """Whether every such frame is exactly ``max_size()`` bytes (quantizers, count > 0)."""
        return CAPABILITIES[self.codec].fixed_size and self.count > 0

    def max_size(self) -> int:
        """The largest frame of this codec, dtype and count (the receive cap)."""
        return pycodecs.compress_bound(self.count, dtype=self.dtype, **self.kw)

    def check(self, frame: object, source: str) -> object:
        """The frame, if its header says what this rank expects; else raise."""
        return _checked(frame, source, (self.codec,), self.codec, self.dtype, self.count)


class AnyFrame:
    """What a receiver with codec="auto" accepts (``Expect``'s interface): a frame of any codec
    auto may send (``AUTO_CODECS``; raw only for a lossless contract) of ``count`` ``dtype``."""

    def __init__(self, spec: CodecSpec, dtype: str, count: int) -> None:
        self.dtype, self.count = dtype, count
        self.codecs = ("raw",) if spec.lossless else AUTO_CODECS
        self.codec = "/".join(self.codecs)
        self._ebq = None if spec.lossless else ebq_spec(spec, "ebq_dense").codec_kwargs()

    def max_size(self) -> int:
        sizes = [pycodecs.compress_bound(self.count, dtype=self.dtype, codec="raw")]
        if self._ebq is not None:
            for level in ("fast", "dense"):
                kw = {**self._ebq, "level": level}
                sizes.append(pycodecs.compress_bound(self.count, dtype=self.dtype, **kw))
        return max(sizes)

    def check(self, frame: object, source: str) -> object:
        """The frame, if its header is one of those this rank accepts; else raise."""
        return _checked(frame, source, self.codecs, f"one of {self.codec}", self.dtype, self.count)


def _checked(
    frame: object, source: str, codecs: tuple[str, ...], want: str, dtype: str, count: int
) -> object:
    try:
        h = pycodecs.header(frame)
    except pycodecs.CodecError as exc:
        raise SettingsMismatchError(f"pycomm: corrupt frame from {source}: {exc}") from None
    if h.codec not in codecs or (h.dtype, h.count) != (dtype, count):
        raise SettingsMismatchError(
            f"pycomm: received a {h.codec} frame of {h.count} {h.dtype} from {source}, "
            f"expected {want} of {count} {dtype}"
        )
    return frame


def recv_frame(
    eng: Engine,
    comm: MPI.Comm,
    source: int,
    tag: int,
    expect: Expect,
    stats: CommStats | None = None,
) -> bytearray:
    """Receive one frame of unknown size (matched probe, safe with threads), capped, checked;
    its bytes are counted as received in stats."""
    status = MPI.Status()
    what = f"receive from rank {source}"
    msg = eng.probe(comm, source, tag, status, what)
    n = status.Get_count(MPI.BYTE)
    buf = bytearray(n)  # never smaller than the message: Open MPI 5 (UCX) writes a truncated
    eng.wait([msg.Irecv([buf, MPI.BYTE])], what)  # large message past the buffer
    refuse_oversize(n, expect, f"rank {source}")
    if stats is not None:
        stats.moved(0, n)
    expect.check(buf, f"rank {source}")
    return buf


def refuse_oversize(n: int, expect: Expect | AnyFrame, source: str) -> None:
    """Raise if a message of ``n`` bytes (taken off the wire whole) is longer than any frame
    ``expect`` allows."""
    cap = expect.max_size()
    if n > cap:
        raise SettingsMismatchError(
            f"pycomm: {source} sent {n} bytes, more than any {expect.codec} frame of "
            f"{expect.count} {expect.dtype} ({cap} bytes)"
        )


def scatter_frames(
    eng: Engine,
    comm: MPI.Comm,
    frames: list,
    expect: Expect,
    stats: CommStats | None = None,
) -> list:
    """Every rank's frame of this rank's chunk, in rank order: frames[j] (chunk j) goes to rank
    j, nearest first, and each received frame is capped and checked against expect (one round,
    N-1 messages each way)."""
    size, rank = comm.Get_size(), comm.Get_rank()
    reqs = []
    for k in range(1, size):
        dest = (rank + k) % size
        reqs.append(comm.Isend([frames[dest], MPI.BYTE], dest=dest, tag=SCATTER_TAG))
        if stats is not None:
            stats.moved(len(frames[dest]), 0)
    mine = [None] * size
    mine[rank] = frames[rank]
    for k in range(1, size):
        src = (rank - k) % size
        mine[src] = recv_frame(eng, comm, src, SCATTER_TAG, expect, stats)
    eng.wait(reqs, "sends of the reduce-scatter")
    return mine


def allgather_frames(
    eng: Engine,
    comm: MPI.Comm,
    frame: object,
    expect: list[Expect],
    stats: CommStats | None = None,
) -> list[memoryview]:
    """Every rank's frame, in rank order, on every rank; rank r's is checked against expect[r].

    On 2 ranks one exchange (send mine, probe and receive the peer's); else the frames
    (``Allgatherv``) after their sizes, one round more, unless every frame's size is fixed by
    its codec and count (quantizers). stats counts this rank's frame as sent to each of the
    others and their frames as received.
    """
    size, rank = comm.Get_size(), comm.Get_rank()
    mine = memoryview(frame).cast("B")
    if stats is not None:
        stats.moved(mine.nbytes * (size - 1), 0)
    if size == 2:
        peer = 1 - rank
        req = comm.Isend([mine, MPI.BYTE], dest=peer, tag=GATHER_TAG)
        theirs = recv_frame(eng, comm, peer, GATHER_TAG, expect[peer], stats)
        eng.wait([req], f"send to rank {peer}")
        return [mine, memoryview(theirs)] if rank == 0 else [memoryview(theirs), mine]
    if all(e.fixed_size for e in expect):
        sizes = np.array([e.max_size() for e in expect], dtype=np.int64)
        if sizes[rank] != mine.nbytes:  # the codec broke FORMAT.md's size rule
            raise RuntimeError(f"pycomm: a {expect[rank].codec} frame of {mine.nbytes} bytes")
    else:
        sizes = _frame_sizes(eng, comm, mine.nbytes, expect)
    displs = np.zeros(size, dtype=np.int64)
    np.cumsum(sizes[:-1], out=displs[1:])
    gathered = bytearray(int(sizes.sum()))
    req = comm.Iallgatherv([mine, MPI.BYTE], [gathered, (sizes, displs), MPI.BYTE])
    eng.wait([req], "allgather of frames")
    if stats is not None:
        stats.moved(0, int(sizes.sum()) - mine.nbytes)
    view = memoryview(gathered)
    frames = [view[int(d) : int(d + n)] for d, n in zip(displs, sizes, strict=True)]
    for r, (f, e) in enumerate(zip(frames, expect, strict=True)):
        e.check(f, f"rank {r}")
    return frames


def _frame_sizes(eng: Engine, comm: MPI.Comm, mine: int, expect: list[Expect]) -> np.ndarray:
    """Every rank's frame size (one allgather), each within what its codec can make."""
    sizes = np.empty(comm.Get_size(), dtype=np.int64)
    eng.wait([comm.Iallgather(np.array([mine], dtype=np.int64), sizes)], "allgather of sizes")
    for r, (n, e) in enumerate(zip(sizes, expect, strict=True)):
        if not 0 <= n <= e.max_size():
            raise SettingsMismatchError(
                f"pycomm: rank {r} announced a frame of {n} bytes, not a {e.codec} frame of "
                f"{e.count} {e.dtype}"
            )
    return sizes
