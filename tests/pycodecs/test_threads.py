"""The codecs from several Python threads at once (the C calls run with the GIL released):
every thread gets the bytes, residuals and values of a single-threaded call."""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pycodecs
import pytest
from pycodecs_support import OPTIONS, codec_params

THREADS = 6
ROUNDS = 3
N = 1 << 17 | 77  # large enough that calls overlap, odd so that every tail path runs


def data(kind: str):
    x = np.random.default_rng(5).standard_normal(N).astype(np.float32)
    x[::1001] = np.nan  # the non-finite paths run concurrently too
    if kind == "torch":
        torch = pytest.importorskip("torch")
        return torch.from_numpy(x)
    return x


def run_together(fn, n: int = THREADS) -> list:
    """fn(i) on n threads released at once by a barrier, ROUNDS times each."""
    start = threading.Barrier(n)

    def work(i: int) -> list:
        start.wait()
        return [fn(i) for _ in range(ROUNDS)]

    with ThreadPoolExecutor(n) as pool:
        return [r for rs in pool.map(work, range(n)) for r in rs]


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("codec", codec_params())
def test_concurrent_compress_is_the_single_threaded_one(codec, kind):
    x = data(kind)
    want = bytes(pycodecs.compress(x, codec, **OPTIONS[codec]))
    got = run_together(lambda i: bytes(pycodecs.compress(x, codec, **OPTIONS[codec])))
    assert all(g == want for g in got)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("codec", codec_params())
def test_concurrent_compress_ef_is_the_single_threaded_one(codec, kind):
    x = data(kind)
    r0 = np.random.default_rng(6).standard_normal(N).astype(np.float32) * 1e-3
    want_res = r0.copy()
    want = bytes(pycodecs.compress_ef(x, want_res, codec, **OPTIONS[codec]))

    def one(i: int):
        res = r0.copy()  # each thread its own residual, from the same start
        return bytes(pycodecs.compress_ef(x, res, codec, **OPTIONS[codec])), res

    for frame, res in run_together(one):
        assert frame == want
        assert np.array_equal(res.view(np.uint32), want_res.view(np.uint32))


@pytest.mark.parametrize("kind", ["numpy", "torch"])
@pytest.mark.parametrize("codec", codec_params())
def test_concurrent_decompress_is_the_single_threaded_one(codec, kind):
    frame = bytes(pycodecs.compress(data("numpy"), codec, **OPTIONS[codec]))
    want = pycodecs.decompress(frame).view(np.uint32)
    if kind == "torch":
        torch = pytest.importorskip("torch")

        def one(i: int):
            out = torch.empty(N, dtype=torch.float32)
            pycodecs.decompress(frame, out=out)
            base = torch.ones(N, dtype=torch.float32)
            pycodecs.decompress_add(frame, out=base)
            return out.numpy(), base.numpy()
    else:

        def one(i: int):
            base = np.ones(N, np.float32)
            return pycodecs.decompress(frame), pycodecs.decompress_add(frame, out=base)

    want_add = pycodecs.decompress_add(frame, out=np.ones(N, np.float32)).view(np.uint32)
    for y, y_add in run_together(one):
        assert np.array_equal(y.view(np.uint32), want)
        assert np.array_equal(y_add.view(np.uint32), want_add)


def test_concurrent_ebq_add_is_the_single_threaded_one():
    a, b = (np.random.default_rng(s).standard_normal(N).astype(np.float32) for s in (1, 2))
    fa, fb = (pycodecs.compress(v, "ebq", error_bound=1e-3) for v in (a, b))
    want = bytes(pycodecs.ebq_add(fa, fb))
    assert all(g == want for g in run_together(lambda i: bytes(pycodecs.ebq_add(fa, fb))))
