"""Triton kernels of ebq's fast level for f32 input (predictor none), bit for bit the C rule.

``_ebq_quantize``: per element the decision of ``ebq_decide_f32`` (codecs/src/ebq.h): the f32
guess round(x * inv_f), then round(x / step) in f64, each kept when |q| < 2^24 and
|x - fl32(q * step)| <= eb in f64; otherwise an outlier (q = 0). Writes the zigzag values,
one width byte per block of 32, an outlier mark per element and, with error feedback, the
residual v - y (0 at outliers). ``_ebq_pack``: each block's 32 values into its 4 * w bytes,
as 32-bit words at the block's word offset. Launch with enable_fp_fusion=False.
"""

import triton
import triton.language as tl

from pycodecs.device._kernels import _load_v

TWO23 = tl.constexpr(8388608.0)
TWO24 = tl.constexpr(16777216.0)
TWO52 = tl.constexpr(4503599627370496.0)


@triton.jit
def _rint_f32(t):
    a = tl.abs(t)
    r = (a + TWO23) - TWO23
    r = (r.to(tl.uint32, bitcast=True) | (t.to(tl.uint32, bitcast=True) & 0x80000000)).to(
        tl.float32, bitcast=True
    )
    return tl.where(a < TWO23, r, t)


@triton.jit
def _rint_f64(t):
    a = tl.abs(t)
    r = (a + TWO52) - TWO52
    sign = t.to(tl.uint64, bitcast=True) & 0x8000000000000000
    r = (r.to(tl.uint64, bitcast=True) | sign).to(tl.float64, bitcast=True)
    return tl.where(a < TWO52, r, t)


@triton.jit(do_not_specialize=["n", "nblocks"])
def _ebq_quantize(
    x_ptr, r_ptr, grid_ptr, z_ptr, width_ptr, outlier_ptr, raw_ptr, n, nblocks,
    HAS_RES: tl.constexpr, G: tl.constexpr,
):  # fmt: skip
    blk = tl.program_id(0).to(tl.int64) * G + tl.arange(0, G)
    idx = blk[:, None] * 32 + tl.arange(0, 32)[None, :]
    mask = idx < n
    step = tl.load(grid_ptr)  # f64: step, eb, then inv_f (exact in f64)
    eb = tl.load(grid_ptr + 1)
    inv_f = tl.load(grid_ptr + 2).to(tl.float32)
    x = _load_v(x_ptr, r_ptr, idx, mask, HAS_RES)
    xd = x.to(tl.float64)
    t = _rint_f32(x * inv_f)
    ok1 = tl.abs(t) < TWO24
    q1 = tl.where(ok1, t, 0.0).to(tl.int32)
    y1 = (q1.to(tl.float64) * step).to(tl.float32)
    ok1 = ok1 & (tl.abs(xd - y1.to(tl.float64)) <= eb)
    td = _rint_f64(xd / step)
    ok2 = tl.abs(td) < TWO24
    q2 = tl.where(ok2, td, 0.0).to(tl.int32)
    y2 = (q2.to(tl.float64) * step).to(tl.float32)
    ok2 = ok2 & (tl.abs(xd - y2.to(tl.float64)) <= eb)
    q = tl.where(ok1, q1, tl.where(ok2, q2, 0))
    y = tl.where(ok1, y1, y2)
    inlier = ok1 | ok2
    z = ((q << 1) ^ (q >> 31)).to(tl.uint32, bitcast=True)
    z = tl.where(mask, z, 0)
    tl.store(z_ptr + idx, z.to(tl.int32, bitcast=True), mask=idx < nblocks * 32)
    tl.store(outlier_ptr + idx, (~inlier).to(tl.int8), mask=mask)
    tl.store(raw_ptr + idx, x.to(tl.int32, bitcast=True), mask=mask & ~inlier)
    orv = tl.max(z, axis=1)  # the OR of the block has the bit length of its largest value
    exponent = (orv.to(tl.float64).to(tl.uint64, bitcast=True) >> 52).to(tl.int32)
    width = tl.where(orv == 0, 0, exponent - 1022)  # bit length, from the exact f64 exponent
    tl.store(width_ptr + blk, width.to(tl.uint8), mask=blk < nblocks)
    if HAS_RES:
        r = x - y
        tl.store(r_ptr + idx, tl.where(inlier, r, 0.0), mask=mask)


@triton.jit(do_not_specialize=["nblocks"])
def _ebq_pack(z_ptr, width_ptr, word_off_ptr, out_ptr, nblocks, G: tl.constexpr):
    """Word j of a block of width w: the OR of the values i whose bits [i w, i w + w) meet
    bits [32 j, 32 j + 32), each shifted by i w - 32 j. One lane per (block, word); a loop
    over the at most 32 // w + 2 values a word meets (w the smallest nonzero width of the
    program's blocks), each read from z (just written: in cache)."""
    blk = tl.program_id(0).to(tl.int64) * G + tl.arange(0, G)
    bmask = blk < nblocks
    w = tl.load(width_ptr + blk, mask=bmask, other=0).to(tl.int32)
    base = tl.load(word_off_ptr + blk, mask=bmask, other=0)
    j = tl.arange(0, 32)[None, :]
    wj = w[:, None]
    wmask = bmask[:, None] & (j < wj)
    first = (32 * j) // tl.maximum(wj, 1)  # the value that holds bit 32 j
    trips = 32 // tl.min(tl.where(w > 0, w, 32), axis=0) + 2
    row = z_ptr + blk[:, None] * 32
    word = tl.zeros([G, 32], tl.uint64)
    for t in range(0, trips):
        i = first + t
        shift = i * wj - 32 * j + 32  # in (32 - w, 64) where the value meets word j
        m = wmask & (i < 32) & (shift < 64)
        zi = tl.load(row + i, mask=m, other=0).to(tl.uint32, bitcast=True).to(tl.uint64)
        word |= zi << tl.where(m, shift, 0).to(tl.uint64)  # bits 32..63 are word j's
    out = (word >> 32).to(tl.uint32).to(tl.int32, bitcast=True)
    tl.store(out_ptr + base[:, None] + j, out, mask=wmask)
