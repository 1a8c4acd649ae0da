"""Error feedback of one buffer's allreduce, kept across steps (``allreduce(residual=...)``)."""

from __future__ import annotations

import numpy as np


class ErrorFeedback:
    """What compression lost, sent along with the next allreduce of the same buffer.

    ``worker``: the residual of this rank's input (x's size and dtype; a numpy array, or a
    device tensor beside a ``Source``): each rank sends x + worker and keeps what its
    compression lost. ``server``: the two-phase allreduce compresses the sum of each chunk a
    second time on the chunk's owner; what that loses is kept here, per owned chunk, keyed by
    the chunk's element range in the buffer. Pickles (numpy arrays and tensors pickle), so it
    travels with a DDP hook state's checkpoint.

    ``worker_zero``: pycomm knows the worker residual holds only zeros (``reset``, or an
    uncompressed allreduce sent and emptied it), so the next uncompressed one need not add it
    (with codec="auto" on a fast link, every call: two passes over the buffer saved). The
    worker residual is pycomm's: change it only through ``reset``.
    """

    __slots__ = ("worker", "server", "offset", "worker_zero")

    def __init__(self, worker: object, server: dict | None = None, offset: int = 0) -> None:
        self.worker = worker
        self.server: dict[tuple[int, int], np.ndarray] = {} if server is None else server
        self.offset = offset  #: where worker[0] sits in the buffer the server keys count in
        self.worker_zero = False  # not known until pycomm empties it

    def part(self, lo: int, hi: int) -> ErrorFeedback:
        """The feedback of elements [lo, hi): a view of the worker residual, the same server
        table (an allreduce of a slice keys its chunks by their place in the whole buffer)."""
        return ErrorFeedback(self.worker[lo:hi], self.server, self.offset + lo)

    def server_residual(self, lo: int, hi: int, dtype: np.dtype) -> np.ndarray:
        """The server residual of elements [lo, hi) of this part (zeros when first asked)."""
        key = (self.offset + lo, self.offset + hi)
        r = self.server.get(key)
        if r is None or r.dtype != dtype:
            r = self.server[key] = np.zeros(hi - lo, dtype)
        return r

    def reset(self) -> None:
        """Forget everything kept (after a step that was skipped)."""
        zero = getattr(self.worker, "zero_", None)  # a tensor
        self.worker.fill(0) if zero is None else zero()
        for r in self.server.values():
            r.fill(0)
        self.worker_zero = True

    def __getstate__(self) -> tuple:
        return (self.worker, self.server, self.offset)

    def __setstate__(self, state: tuple) -> None:
        self.worker, self.server, self.offset = state
        self.worker_zero = False

    def __repr__(self) -> str:
        n = getattr(self.worker, "size", None)
        n = self.worker.numel() if callable(n) else n
        return f"ErrorFeedback(worker of {n}, {len(self.server)} server chunks)"
