"""CPU torch tensors: zero-copy in and out, bfloat16, autograd leaves, refusals."""

import numpy as np
import pycodecs
import pytest
from pycodecs._buffers import source
from pycodecs_support import OPTIONS, codec_params

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.float16])
def test_input_is_not_copied(dtype):
    t = torch.randn(1000).to(dtype)
    view, name, count = source(t)
    assert view.ctypes.data == t.data_ptr() and count == 1000
    assert name == str(dtype).removeprefix("torch.")


def test_frames_match_numpy():
    t = torch.randn(333)
    assert pycodecs.compress(t, "raw") == pycodecs.compress(t.numpy(), "raw")
    b = t.to(torch.bfloat16)
    assert pycodecs.compress(b, "raw") == pycodecs.compress(
        b.view(torch.int16).numpy(), "raw", dtype="bfloat16"
    )


@pytest.mark.parametrize("codec", codec_params())
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_decode_in_place_into_tensor(codec, dtype):
    t = torch.randn(4, 250).to(dtype)
    try:
        frame = pycodecs.compress(t, codec, **OPTIONS[codec])
    except pycodecs.CodecError as e:
        if e.status_name == "MPIUCC_ERR_UNSUPPORTED":
            pytest.skip(f"{codec} does not take {dtype}")
        raise
    out = torch.full((1000,), 7.0, dtype=dtype)
    ptr = out.data_ptr()
    assert pycodecs.decompress(frame, out=out) is out and out.data_ptr() == ptr
    y = pycodecs.decompress(frame)
    assert torch.equal(
        out.view(torch.int16) if dtype == torch.bfloat16 else out, torch.from_numpy(y)
    )
    if codec == "raw":
        assert torch.equal(out, t.reshape(-1))


def test_decompress_add_bfloat16_matches_torch():
    a, b = torch.randn(1000).bfloat16(), torch.randn(1000).bfloat16()
    acc = a.clone()
    pycodecs.decompress_add(pycodecs.compress(b, "raw"), acc)
    assert torch.equal(acc, a + b)


def test_autograd_leaves_and_parameters():
    p = torch.nn.Parameter(torch.randn(64))
    frame = pycodecs.compress(p, "raw")
    assert torch.equal(torch.from_numpy(pycodecs.decompress(frame)), p.detach())
    g = torch.zeros(64, requires_grad=True)
    with torch.no_grad():
        pycodecs.decompress(frame, out=g)
    assert torch.equal(g.detach(), p.detach())


def test_residual_tensor_updated_in_place():
    x = torch.randn(100, dtype=torch.float32)
    r = torch.randn(100, dtype=torch.float32) * 1e-3
    v = x.double() + r.double()
    ptr = r.data_ptr()
    frame = pycodecs.compress_ef(x, r, "raw")
    assert r.data_ptr() == ptr
    assert torch.equal(r, (v - v.float().double()).float())
    assert torch.equal(torch.from_numpy(pycodecs.decompress(frame)), v.float())


def test_tensor_buffers_for_frames():
    x = torch.randn(10)
    buf = torch.zeros(200, dtype=torch.uint8)
    view = pycodecs.compress(x, "raw", out=buf)
    assert np.shares_memory(np.asarray(view), buf.numpy())
    assert torch.equal(torch.from_numpy(pycodecs.decompress(buf)), x)


@pytest.mark.parametrize(
    "make, exc",
    [
        (lambda: torch.randn(10, 10).t(), ValueError),  # not contiguous
        (lambda: torch.randn(20)[::2], ValueError),
        (lambda: torch.empty(10, device="meta"), ValueError),  # not on the CPU
        (lambda: torch.arange(10, dtype=torch.int32), TypeError),
        (lambda: torch.randn(10, dtype=torch.complex64), TypeError),
    ],
)
def test_refused_tensors(make, exc):
    with pytest.raises(exc):
        pycodecs.compress(make(), "raw")


def test_out_tensor_checked():
    frame = pycodecs.compress(torch.randn(10), "raw")
    with pytest.raises(TypeError):
        pycodecs.decompress(frame, out=torch.empty(10, dtype=torch.bfloat16))
    with pytest.raises(ValueError):
        pycodecs.decompress(frame, out=torch.empty(11))
    with pytest.raises(ValueError):
        pycodecs.decompress(frame, out=torch.empty(20)[::2])
