"""Fixtures of the pycodecs tests; the helpers themselves are in pycodecs_support."""

import pycodecs
import pytest
from pycodecs_support import VARIANTS, roundtrip


@pytest.fixture(params=VARIANTS)
def variant(request):
    """Each input/output kind: numpy, bytes, bytearray, torch, out=."""
    return request.param


@pytest.fixture
def codec_roundtrip(variant):
    """roundtrip(x, codec, dtype=None, **options) through the current variant."""

    def run(x, codec, dtype=None, **options):
        return roundtrip(x, codec, variant, dtype, **options)

    return run


@pytest.fixture(autouse=True)
def _restore_simd_level():
    """No test leaves the kernels forced to another SIMD level."""
    before = pycodecs.simd_level()
    yield
    pycodecs.set_simd_level(before)
