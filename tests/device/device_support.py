"""Adversarial float32 data for the device codec tests."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

# Bit patterns every quantizer must treat exactly as the C code does.
SPECIAL_BITS = [
    0x00000000, 0x80000000,  # +-0
    0x00000001, 0x80000001, 0x007FFFFF, 0x00400000,  # denormals
    0x00800000, 0x1F7FFFFF, 0x1F800000,  # smallest normal; just below and at 2^-64
    0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F0000, 0x7F7F8000,  # FLT_MAX, largest bf16, its rounding
    0x477FE000, 0x477FF000, 0x477FEFFF, 0x33000000, 0x387FFFFF,  # fp16 edges
    0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x7FA00000,  # Inf, NaNs
    0x3F800000, 0xBF800000, 0x3EFFFFFF,
]  # fmt: skip
SIZES = st.integers(0, 600) | st.sampled_from([1, 7, 8, 9, 255, 256, 257, 513])


@st.composite
def adversarial(draw, size=None, finite=False) -> np.ndarray:
    """float32 arrays: any bits, special values, constant runs, huge ranges."""
    n = draw(SIZES) if size is None else size
    kind = draw(st.sampled_from(["bits", "special", "normal", "constant", "range"]))
    if kind == "bits":
        x = draw(hnp.arrays(np.uint32, n, elements=st.integers(0, 2**32 - 1))).view(np.float32)
    elif kind == "special":
        pick = st.sampled_from(SPECIAL_BITS) | st.integers(0, 2**32 - 1)
        x = draw(hnp.arrays(np.uint32, n, elements=pick)).view(np.float32)
    elif kind == "normal":
        scale = draw(st.sampled_from([1e-30, 1e-3, 1.0, 1e4, 1e30]))
        seed = draw(st.integers(0, 2**32 - 1))
        x = (np.random.default_rng(seed).standard_normal(n) * scale).astype(np.float32)
    elif kind == "constant":
        x = np.full(n, np.uint32(draw(st.sampled_from(SPECIAL_BITS)))).view(np.float32)
    else:
        seed = draw(st.integers(0, 2**32 - 1))
        r = np.random.default_rng(seed)
        x = (r.choice([-1.0, 1.0], n) * 10.0 ** r.uniform(-44, 38, n)).astype(np.float32)
    x = np.ascontiguousarray(x)
    if finite:
        x[~np.isfinite(x)] = 0.0
    return x
