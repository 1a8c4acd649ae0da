"""Device quantizers: frames equal the C frames byte for byte, decode with the C decoder, and
error feedback leaves the same residual bits; bad arguments raise before any kernel runs."""

import os
import subprocess
import sys

import numpy as np
import pycodecs
import pytest
import torch
from device_support import SIZES, adversarial
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("triton")
from pycodecs import device as dc  # noqa: E402 (after the skip)

# The interpreter runs a kernel in about 0.1 s: 15 examples per case keep this file near a minute.
HSETTINGS = settings(
    max_examples=int(os.environ.get("DEVICE_EXAMPLES", "15")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the interpreter's NaN math
BLOCKS = {"fp16": [0], "bf16": [0], "int8": [0, 8, 24, 264], "int4": [0, 8, 24, 264],
          "sign": [0, 8, 24, 264]}  # fmt: skip
BLOCKS_ONLY = ("int8", "int4", "sign")
CASES = [(c, b) for c in dc.CODECS for b in BLOCKS[c]]


def on(device, x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(x.copy()).to(device)


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


@pytest.mark.parametrize(("codec", "block"), CASES)
@HSETTINGS
@given(data=st.data())
def test_frame_equals_c_frame(device, codec, block, data):
    x = data.draw(adversarial())
    checksum = data.draw(st.booleans())
    frame = dc.compress(on(device, x), codec, block_size=block, checksum=checksum)
    assert bytes(frame) == bytes(pycodecs.compress(x, codec, block_size=block, checksum=checksum))


@pytest.mark.parametrize(("codec", "block"), CASES)
@HSETTINGS
@given(data=st.data())
def test_error_feedback_equals_c(device, codec, block, data):
    x = data.draw(adversarial())
    r = data.draw(adversarial(size=x.size, finite=True))
    r_dev, r_c = on(device, r), r.copy()
    frame = dc.compress(on(device, x), codec, residual=r_dev, block_size=block)
    assert bytes(frame) == bytes(pycodecs.compress_ef(x, r_c, codec, block_size=block))
    assert np.array_equal(bits(r_dev.cpu().numpy()), bits(r_c))


@pytest.mark.parametrize("codec", ["int8", "int4"])
@HSETTINGS
@given(x=SIZES.flatmap(lambda n: adversarial(size=n, finite=True)))
def test_decoded_within_the_block_bound(device, codec, x):
    """C-decoded device frames: |v - y| <= scale / 2 + 2^-22 absmax per finite block (plus the
    scale's own underflow among denormals)."""
    r = torch.zeros(x.size, dtype=torch.float32, device=device)
    frame = dc.compress(on(device, x), codec, residual=r)
    y = pycodecs.decompress(frame)
    levels = 127 if codec == "int8" else 7
    for i in range(0, x.size, 256):
        v, d = x[i : i + 256].astype(np.float64), y[i : i + 256].astype(np.float64)
        a = np.abs(v).max()
        if np.isinf(a / levels):
            continue  # past FLT_MAX the scale is lowered by an ulp; the C tests cover it
        assert np.all(np.abs(v - d) <= a / levels / 2 * (1 + 2**-20) + 2**-22 * a + 2**-140)
    # the residual is what compression lost, bit for bit (v = x + 0 turns -0 into +0)
    v = x + np.float32(0)
    assert np.array_equal(bits(r.cpu().numpy()), bits((v - y).astype(np.float32)))


@pytest.mark.parametrize("codec", dc.CODECS)
def test_nan_payloads_and_signs_with_error_feedback(device, codec):
    """v = x + residual makes the NaN an x86 CPU makes (x's payload and sign, else the
    residual's, Inf - Inf the default NaN 0xffc00000), not a GPU's canonical NaN."""
    x = np.array([0x7FA00000, 0xFFC00001, 0x7F800000, 0x3F800000] * 4, np.uint32)
    r = np.array([0x3F800000, 0x7FC00000, 0xFF800000, 0xFFB00002] * 4, np.uint32)
    x, r = x.view(np.float32), r.view(np.float32)
    r_dev, r_c = on(device, r), r.copy()
    frame = dc.compress(
        on(device, x), codec, residual=r_dev, block_size=8 if codec in BLOCKS_ONLY else 0
    )
    want = pycodecs.compress_ef(x, r_c, codec, block_size=8 if codec in BLOCKS_ONLY else 0)
    assert bytes(frame) == bytes(want)
    assert np.array_equal(bits(r_dev.cpu().numpy()), bits(r_c))


@pytest.mark.parametrize("codec", dc.CODECS)
def test_flags_reach_the_header(device, codec):
    x = np.array([1.0, np.inf, -2.0, 1e6] * 8, np.float32)
    h = pycodecs.header(dc.compress(on(device, x), codec))
    assert h.nonfinite
    assert h.aux == (1 if codec == "fp16" else 0)  # 1e6 saturates in fp16 only
    assert pycodecs.header(dc.compress(on(device, x[:1]), codec)).nonfinite is False


def test_bad_arguments_raise(device):
    x = torch.ones(16, device=device)
    with pytest.raises(ValueError, match="codec"):
        dc.compress(x, "qsgd")
    with pytest.raises(TypeError, match="float32"):
        dc.compress(x.double(), "int8")
    with pytest.raises(TypeError, match="torch.Tensor"):
        dc.compress(np.ones(4, np.float32), "int8")
    with pytest.raises(ValueError, match="contiguous"):
        dc.compress(torch.ones(4, 4, device=device).t(), "int8")
    with pytest.raises(ValueError, match="element count"):
        dc.compress(x, "int8", residual=torch.zeros(15, device=device))
    for bad in (4, 12, 65544):
        with pytest.raises(ValueError, match="block_size"):
            dc.compress(x, "int8", block_size=bad)
    with pytest.raises(ValueError, match="block_size"):
        dc.compress(x, "fp16", block_size=8)
    with pytest.raises(NotImplementedError):
        dc.compress(x, "int8", rounding="stochastic")


def test_pycodecs_imports_neither_torch_nor_triton():
    code = "import sys, pycodecs; print('torch' in sys.modules, 'triton' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize(("codec", "block"), CASES)
def test_large_frames_on_the_gpu(codec, block):
    """Several million elements, many programs: the same bytes and residual as the C path."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(3_000_017) * 10.0 ** rng.uniform(-8, 8, 3_000_017)).astype(np.float32)
    x[::100_003] = np.nan
    r = (rng.standard_normal(x.size) * 1e-3).astype(np.float32)
    r_dev, r_c = on("cuda", r), r.copy()
    frame = dc.compress(on("cuda", x), codec, residual=r_dev, block_size=block)
    assert bytes(frame) == bytes(pycodecs.compress_ef(x, r_c, codec, block_size=block))
    assert np.array_equal(bits(r_dev.cpu().numpy()), bits(r_c))
