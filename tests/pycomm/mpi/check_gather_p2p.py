"""allgather, bcast and point-to-point through codecs; mismatches fail loudly."""

from __future__ import annotations

import numpy as np
import pycodecs
from _check import COMM, QUANTIZERS, RANK, SIZE, everyone, max_error, params, same_everywhere

import pycomm


def check_allgather() -> None:
    for n in (0, 1, 777):
        x = np.random.default_rng(RANK).standard_normal(n).astype(np.float32)
        for codec in ("none", "ebq", *QUANTIZERS):
            kw = params(codec)
            y = pycomm.allgather(x, codec=codec, **kw)
            same_everywhere(y, f"allgather {codec} n={n}")
            assert y.shape == (SIZE, n)
            bound = 1e-3 if codec in ("none", "ebq", "fp16") else 4 * np.abs(x).max(initial=0)
            assert max_error(y, everyone(x)) <= max(bound, 1e-3), codec
            req = pycomm.iallgather(x, codec=codec, **kw)
            assert np.array_equal(req.wait(timeout=60), y)


def check_bcast() -> None:
    for root in range(SIZE):
        x = np.random.default_rng(root).standard_normal(5000).astype(np.float64)
        original = x.copy()
        buf = x if RANK == root else np.zeros_like(x)
        pycomm.bcast(buf, root=root, codec="ebq", error_bound=1e-6, mode="abs")
        same_everywhere(buf, f"bcast root={root}")
        assert max_error(buf, original) <= 1e-6
    buf = np.arange(10.0) if RANK == 0 else np.zeros(10)
    pycomm.ibcast(buf, 0).wait(timeout=60)
    assert np.array_equal(buf, np.arange(10.0))


def check_p2p() -> None:
    peer = RANK ^ 1
    if peer >= SIZE:
        return
    x = np.random.default_rng(RANK).standard_normal(3001).astype(np.float32)
    out = np.empty_like(x)
    # Both sides post the receive first: non-blocking requests must not deadlock.
    rreq = pycomm.irecv(out, source=peer, tag=7, codec="ebq", error_bound=1e-4)
    sreq = pycomm.isend(x, dest=peer, tag=7, codec="ebq", error_bound=1e-4)
    sreq.wait(timeout=60)
    rreq.wait(timeout=60)
    sent = np.random.default_rng(peer).standard_normal(3001).astype(np.float32)
    assert max_error(out, sent) <= 1e-4
    for codec in QUANTIZERS:  # every quantizer through send/recv, decoded as sent
        kw = params(codec)
        if RANK % 2 == 0:
            pycomm.send(x, dest=peer, tag=10, codec=codec, **kw)
        else:
            pycomm.recv(out, source=peer, tag=10, codec=codec, **kw)
            want = pycodecs.decompress(pycodecs.compress(sent, codec=codec, **kw))
            assert np.array_equal(out, want), codec
    if RANK % 2 == 0:
        pycomm.send(x, dest=peer, tag=8)
        pycomm.send(x, dest=peer, tag=9, codec="ebq", error_bound=1e-4)
    else:
        pycomm.recv(out, source=peer, tag=8)
        assert np.array_equal(out, sent)
        try:  # the receiver expects another codec: a clear error, not garbage
            pycomm.recv(out, source=peer, tag=9, codec="none")
        except pycomm.SettingsMismatchError:
            pass
        else:
            raise AssertionError("codec mismatch in recv not detected")


def main() -> None:
    check_allgather()
    check_bcast()
    check_p2p()
    COMM.Barrier()
    if RANK == 0:
        print("gather/p2p checks passed on", SIZE, "ranks")


if __name__ == "__main__":
    main()
