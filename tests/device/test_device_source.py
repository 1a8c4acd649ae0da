"""A collective over a DeviceSource equals the same collective over host arrays bit for bit:
frames made where the values live, or the values fetched where the algorithm needs them raw
(one rank; the device codecs under Triton's interpreter without a GPU)."""

import numpy as np
import pytest
import torch

pytest.importorskip("triton")
pycomm = pytest.importorskip("pycomm")
from pycomm.distributed.device_source import DeviceSource, device_codec  # noqa: E402

N = 3000


@pytest.mark.parametrize(
    ("codec", "params", "algorithm", "ef"),
    [
        ("int8", {}, "auto", True),  # gathered, error feedback on the device
        ("int8", {}, "twophase", True),  # frames and error feedback on the device
        ("ebq", {"error_bound": 1e-3, "mode": "rel"}, "ring", True),  # exact sums of frames
        ("ebq", {"error_bound": 1e-30}, "auto", True),  # bound out of reach: fetched, sent exact
        ("none", {}, "auto", True),  # uncompressed: fetched, the residual sent along
    ],
)
def test_source_equals_host_arrays(device, codec, params, algorithm, ef):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(N) * 1e-2).astype(np.float32)
    x[5] = np.nan
    r = (rng.standard_normal(N) * 1e-4).astype(np.float32) if ef else None
    want = np.empty_like(x)
    r_host = None if r is None else r.copy()
    kw = dict(op="mean", algorithm=algorithm, segment=1000, **params)
    pycomm.allreduce(x, None, codec, out=want, residual=r_host, **kw)

    xs = torch.from_numpy(x).to(device)
    rs = None if r is None else torch.from_numpy(r).to(device)
    got = np.empty_like(x)
    source = DeviceSource(xs, rs)
    pycomm.allreduce(got, None, codec, out=got, source=source, **kw)
    assert (got.view(np.uint32) == want.view(np.uint32)).all()
    if r is not None:
        assert (rs.cpu().numpy().view(np.uint32) == r_host.view(np.uint32)).all()


def test_which_codecs_run_on_the_device(device):
    t = torch.zeros(4, device=device)
    assert device_codec(pycomm.CodecSpec("int8", block_size=64), t)
    assert device_codec(pycomm.CodecSpec("ebq", error_bound=1e-3), t)
    assert not device_codec(pycomm.CodecSpec("ebq", error_bound=1e-3, level="dense"), t)
    assert not device_codec(pycomm.CodecSpec("int8", rounding="stochastic"), t)
    assert not device_codec(pycomm.CodecSpec("qsgd"), t)
    assert not device_codec(pycomm.CodecSpec("int8"), t.double())


def test_a_source_must_match_x(device):
    source = DeviceSource(torch.zeros(8, device=device), None)
    with pytest.raises(ValueError, match="source"):
        pycomm.allreduce(np.zeros(9, np.float32), None, "int8", source=source)
