"""ebq fast level on the device: frames equal the C frames byte for byte (abs and rel, with
and without error feedback), the C decoder reads them and the bound holds."""

import os

import numpy as np
import pycodecs
import pytest
import torch
from device_support import adversarial
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("triton")
from pycodecs import device as dc  # noqa: E402 (after the skip)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the interpreter's NaN math
HSETTINGS = settings(
    max_examples=int(os.environ.get("DEVICE_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
BOUNDS = st.sampled_from([1e-3, 0.5, 1e-9, 1e-40, 1e30, 2.0**1023, 1.7e308]) | st.floats(
    1e-45, 1e38, allow_nan=False
)


def on(device, x):
    return torch.from_numpy(x.copy()).to(device)


def bits(a):
    return np.ascontiguousarray(a).view(np.uint32)


@pytest.mark.parametrize("mode", ["abs", "rel"])
@HSETTINGS
@given(data=st.data())
def test_frame_equals_c_frame(device, mode, data):
    x = data.draw(adversarial())
    eb = data.draw(BOUNDS)
    checksum = data.draw(st.booleans())
    frame = dc.compress(on(device, x), "ebq", error_bound=eb, mode=mode, checksum=checksum)
    want = pycodecs.compress(x, "ebq", error_bound=eb, mode=mode, checksum=checksum)
    assert bytes(frame) == bytes(want)


@pytest.mark.parametrize("mode", ["abs", "rel"])
@HSETTINGS
@given(data=st.data())
def test_error_feedback_equals_c(device, mode, data):
    x = data.draw(adversarial())
    r = data.draw(adversarial(size=x.size, finite=True))
    eb = data.draw(BOUNDS)
    r_dev, r_c = on(device, r), r.copy()
    frame = dc.compress(on(device, x), "ebq", error_bound=eb, mode=mode, residual=r_dev)
    assert bytes(frame) == bytes(pycodecs.compress_ef(x, r_c, "ebq", error_bound=eb, mode=mode))
    assert np.array_equal(bits(r_dev.cpu().numpy()), bits(r_c))


@HSETTINGS
@given(x=adversarial(), eb=BOUNDS)
def test_decoded_within_the_bound(device, x, eb):
    frame = dc.compress(on(device, x), "ebq", error_bound=eb)
    y = pycodecs.decompress(frame)
    h = pycodecs.header(frame)
    finite = np.isfinite(x)
    assert np.all(np.abs(x[finite].astype(np.float64) - y[finite]) <= h.bound)
    assert np.array_equal(bits(x[~finite]), bits(y[~finite]))  # NaN and Inf bit-exact
    assert h.nonfinite == bool((~finite).any())


def test_bad_arguments(device):
    x = torch.ones(8, device=device)
    with pytest.raises(ValueError, match="error_bound"):
        dc.compress(x, "ebq")
    with pytest.raises(ValueError, match="error_bound"):
        dc.compress(x, "ebq", error_bound=-1.0)
    with pytest.raises(ValueError, match="mode"):
        dc.compress(x, "ebq", error_bound=1.0, mode="relative")
    with pytest.raises(ValueError, match="block_size"):
        dc.compress(x, "ebq", error_bound=1.0, block_size=64)
    with pytest.raises(ValueError, match="error_bound"):
        dc.compress(x, "int8", error_bound=1.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_large_frame_on_the_gpu():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(3_000_017) * 10.0 ** rng.uniform(-8, 8, 3_000_017)).astype(np.float32)
    x[::100_003] = np.nan
    r = (rng.standard_normal(x.size) * 1e-3).astype(np.float32)
    r_dev, r_c = on("cuda", r), r.copy()
    frame = dc.compress(on("cuda", x), "ebq", error_bound=1e-4, mode="rel", residual=r_dev)
    assert bytes(frame) == bytes(pycodecs.compress_ef(x, r_c, "ebq", error_bound=1e-4, mode="rel"))
    assert np.array_equal(bits(r_dev.cpu().numpy()), bits(r_c))
