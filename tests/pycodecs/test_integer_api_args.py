"""Argument checks of the ebq integer-domain functions (Python side, any build)."""

import numpy as np
import pycodecs
import pytest


@pytest.mark.parametrize(
    "call, exc",
    [
        (
            lambda: pycodecs.ebq_quantize(np.ones(4, np.float32), 0.1, np.empty(4, np.int64)),
            TypeError,
        ),
        (
            lambda: pycodecs.ebq_quantize(np.ones(4, np.float32), 0.1, np.empty(5, np.int32)),
            ValueError,
        ),
        (
            lambda: pycodecs.ebq_quantize(np.ones(4, np.float32), -0.1, np.empty(4, np.int32)),
            ValueError,
        ),
        (
            lambda: pycodecs.ebq_quantize(np.ones(4, np.float32), 0.1, np.empty(8, np.int32)[::2]),
            ValueError,
        ),
        (lambda: pycodecs.pack_indices(np.ones(4, np.int64)), TypeError),
        (lambda: pycodecs.pack_indices([1, 2, 3]), TypeError),
        (lambda: pycodecs.unpack_indices(b"", -1), ValueError),
        (lambda: pycodecs.unpack_indices(b"", 3, out=np.empty(4, np.int32)), ValueError),
        (lambda: pycodecs.unpack_indices(b"", 3, out=np.empty(3, np.uint32)), TypeError),
    ],
)
def test_argument_errors(call, exc):
    with pytest.raises(exc):
        call()
