"""The numcodecs classes: numcodecs' own checks, configs, and the entry-point registry."""

import json
import subprocess
import sys
from importlib.metadata import entry_points

import numpy as np
import pytest
from pycodecs_support import requires_codec

numcodecs = pytest.importorskip("numcodecs")
from numcodecs.tests.common import check_config, check_encode_decode  # noqa: E402
from pycodecs import numcodecs_codecs as nc  # noqa: E402
from pycodecs.capabilities import CAPABILITIES, CODEC_OPTIONS, REQUIRED  # noqa: E402

# (class, codec, constructor arguments, decimal places numcodecs' check compares to)
CASES = [
    (nc.Raw, "raw", {}, None),
    (nc.EBQ, "ebq", {"error_bound": 1e-3}, 2),
    (
        nc.EBQ,
        "ebq",
        {
            "error_bound": 1e-3,
            "mode": "rel",
            "level": "dense",
            "predictor": "delta",
            "checksum": True,
        },
        2,
    ),
    (nc.FP16, "fp16", {}, 2),
    (nc.BF16, "bf16", {}, 2),
    (nc.Int8, "int8", {"block_size": 64}, 2),
    (nc.Int4, "int4", {"rounding": "stochastic", "seed": 3}, 0),
    (nc.Sign, "sign", {}, -1),
    (nc.QSGD, "qsgd", {"levels": 16, "seed": 1}, 0),
    (nc.TopK, "topk", {"k": 8, "block_size": 64}, 0),
]
PARAMS = [
    pytest.param(*c, marks=requires_codec(c[1]), id=f"{c[0].__name__}-{i}")
    for i, c in enumerate(CASES)
]


@pytest.mark.parametrize("cls, codec, kwargs, precision", PARAMS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numcodecs_encode_decode(cls, codec, kwargs, precision, dtype):
    arr = np.random.default_rng(0).uniform(-1, 1, (40, 25)).astype(dtype)
    c = cls(**kwargs, dtype=dtype)
    check_encode_decode(arr, c, precision=precision)
    check_encode_decode(np.asfortranarray(arr), c, precision=precision)
    assert cls(**kwargs).decode(cls(**kwargs).encode(arr)).dtype == np.dtype(dtype)


@pytest.mark.parametrize("cls, codec, kwargs, precision", PARAMS)
def test_numcodecs_config(cls, codec, kwargs, precision):
    c = cls(**kwargs)
    check_config(c)
    config = c.get_config()
    assert config["id"] == f"mpiucc.{codec}" == cls.codec_id
    json.dumps(config)
    assert cls.from_config({k: v for k, v in config.items() if k != "id"}) == c
    assert repr(c).startswith(cls.__name__)


def test_every_class_has_an_entry_point():
    eps = {e.name: e.value for e in entry_points(group="numcodecs.codecs")}
    for cls in (nc.Raw, nc.EBQ, nc.FP16, nc.BF16, nc.Int8, nc.Int4, nc.Sign, nc.QSGD, nc.TopK):
        assert eps.get(cls.codec_id) == f"pycodecs.numcodecs_codecs:{cls.__name__}"


def test_every_codec_in_the_table_has_a_class_with_its_options():
    """The classes are made from pycodecs.capabilities: one per codec, its configuration the
    codec's options with the table's defaults, then the common ones."""
    classes = {getattr(nc, name).codec_id: getattr(nc, name) for name in nc.__all__}
    assert set(classes) == {f"mpiucc.{codec}" for codec in CODEC_OPTIONS}
    for codec, options in CODEC_OPTIONS.items():
        given = {k: 0.5 for k, v in options.items() if v is REQUIRED}
        config = classes[f"mpiucc.{codec}"](**given).get_config()
        common = {"id": f"mpiucc.{codec}", "checksum": False, "dtype": None}
        if CAPABILITIES[codec].threaded:
            common["threads"] = None
        assert config == {**options, **given, **common}, codec


def test_registry_finds_codecs_through_the_entry_point():
    code = (
        "import sys, numcodecs\n"
        "assert 'pycodecs.numcodecs_codecs' not in sys.modules\n"
        "c = numcodecs.get_codec({'id': 'mpiucc.ebq', 'error_bound': 0.5, 'mode': 'rel'})\n"
        "print(type(c).__module__, type(c).__name__, c.error_bound, c.mode)\n"
        "print(type(numcodecs.get_codec({'id': 'mpiucc.topk', 'k': 2})).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    assert out == ["pycodecs.numcodecs_codecs", "EBQ", "0.5", "rel", "TopK"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: nc.EBQ(error_bound=-1),
        lambda: nc.EBQ(error_bound=0.1, mode="relative"),
        lambda: nc.Int8(rounding="up"),
        lambda: nc.Int4(block_size=-1),
        lambda: nc.Raw(dtype="int32"),
        lambda: nc.TopK(k=-1),
    ],
)
def test_bad_parameters_fail_at_construction(make):
    with pytest.raises(ValueError):
        make()


def test_untyped_buffers_need_dtype():
    with pytest.raises(TypeError):
        nc.Raw().encode(b"\0" * 8)
    with pytest.raises(TypeError):
        nc.Raw(dtype="float64").encode(np.zeros(2, np.float32))


def test_decode_into_other_layouts():
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    c = nc.Raw()
    enc = c.encode(arr)
    out = np.zeros((4, 3), np.float32, order="F")
    c.decode(enc, out=out)
    assert np.array_equal(out.ravel(order="A"), arr.ravel())
    out = bytearray(48)
    c.decode(enc, out=out)
    assert np.array_equal(np.frombuffer(out, np.float32), arr.ravel())
    assert np.array_equal(c.decode(c.encode(arr[:, ::2])), arr[:, ::2].ravel())
