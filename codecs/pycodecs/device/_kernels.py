"""Triton kernels of the quantizers for f32 input, bit for bit the C encoders' payloads.

Each kernel reads v = x (+ residual) in f32, writes the payload bytes of codecs/FORMAT.md and,
with error feedback, the new residual v - decoded (+0 where not finite), in one pass. The
arithmetic is the C scalar rule's, operation for operation: integer narrowing for fp16/bf16,
IEEE division (div_rn), the add-and-subtract rounding of q_rint, the 16-lane f64 sum of sign.
Launch with enable_fp_fusion=False (as the C build's -ffp-contract=off): a fused multiply-add
would round differently. ``flags`` gets bit 0 for a saturated fp16/bf16 value and bit 1 for a
non-finite value (or block), by atomic or. Sizes are not specialized on (one compilation
per launch shape, whatever the element count).
"""

import triton
import triton.language as tl

F16_MAX_BITS = tl.constexpr(0x477FE000)  # 65504.0f
BF16_MAX_BITS = tl.constexpr(0x7F7F0000)
INF_BITS = tl.constexpr(0x7F800000)
NAN_SCALE_BITS = tl.constexpr(0x7FC00000)
TINY_BITS = tl.constexpr(0x1F800000)  # 2^-64: blocks below are coded from v * 2^64
TINY_PRE = tl.constexpr(18446744073709551616.0)  # 2^64
FLT_MAX = tl.constexpr(3.4028234663852886e38)
INF = tl.constexpr(float("inf"))
ROUND_MAGIC = tl.constexpr(12582912.0)  # 1.5 * 2^23: (y + M) - M rounds |y| < 2^22 to even


@triton.jit
def _load_v(x_ptr, r_ptr, idx, mask, HAS_RES: tl.constexpr):
    v = tl.load(x_ptr + idx, mask=mask, other=0.0)
    if HAS_RES:
        r = tl.load(r_ptr + idx, mask=mask, other=0.0)
        v = _add_x86(v, r)
    return v


@triton.jit
def _add_x86(x, r):
    """x + r with the NaN an x86 CPU makes: x's NaN quieted, else r's, else (Inf - Inf) the
    default NaN 0xffc00000. A GPU returns one canonical NaN instead, and fp16, bf16 and sign
    frames carry a NaN's payload or sign bit."""
    xb = x.to(tl.uint32, bitcast=True)
    rb = r.to(tl.uint32, bitcast=True)
    s = x + r
    nan = tl.where((rb & 0x7FFFFFFF) > INF_BITS, rb | 0x400000, 0xFFC00000)
    nan = tl.where((xb & 0x7FFFFFFF) > INF_BITS, xb | 0x400000, nan)
    return tl.where(s != s, nan.to(tl.float32, bitcast=True), s)


@triton.jit
def _store_res(r_ptr, idx, mask, v, dec, HAS_RES: tl.constexpr):
    if HAS_RES:
        r = v - dec
        tl.store(r_ptr + idx, tl.where(tl.abs(r) < INF, r, 0.0), mask=mask)


@triton.jit
def _f32_to_f16_bits(u):
    """mpiucc_f32_to_f16 on uint32 bits (round to nearest even, NaN payload kept)."""
    sign = (u >> 16) & 0x8000
    a = u & 0x7FFFFFFF
    nan = sign | 0x7E00 | ((a >> 13) & 0x3FF)
    r = a - 0x38000000
    normal = sign | ((r + 0xFFF + ((r >> 13) & 1)) >> 13)
    e = a >> 23
    shift = tl.minimum(tl.maximum(126 - e.to(tl.int32), 14), 24).to(tl.uint32)
    m = (a & 0x7FFFFF) | 0x800000
    q = m >> shift
    rem = m & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    q = q + ((rem > half) | ((rem == half) & ((q & 1) == 1))).to(tl.uint32)
    h = tl.where(a < 0x33000000, sign, sign | q)
    h = tl.where(a >= 0x38800000, normal, h)
    h = tl.where(a >= 0x477FF000, sign | 0x7C00, h)
    return tl.where(a > INF_BITS, nan, h)


@triton.jit(do_not_specialize=["n"])
def _half_kernel(
    x_ptr, r_ptr, out_ptr, flags_ptr, n,
    FP16: tl.constexpr, HAS_RES: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < n
    v = _load_v(x_ptr, r_ptr, idx, mask, HAS_RES)
    u = v.to(tl.uint32, bitcast=True)
    a = u & 0x7FFFFFFF
    top = F16_MAX_BITS if FP16 else BF16_MAX_BITS
    over = (a > top) & (a < INF_BITS)
    sat = tl.where(over, (u & 0x80000000) | top, u)
    if FP16:
        h = _f32_to_f16_bits(sat)
        dec = h.to(tl.uint16).to(tl.float16, bitcast=True).to(tl.float32)
    else:
        sa = sat & 0x7FFFFFFF
        rounded = ((sa + 0x7FFF + ((sa >> 16) & 1)) | (sat & 0x80000000)) >> 16
        h = tl.where(a > INF_BITS, (u | 0x00400000) >> 16, rounded)
        dec = (h << 16).to(tl.float32, bitcast=True)
    tl.store(out_ptr + idx, h.to(tl.uint16).to(tl.int16, bitcast=True), mask=mask)
    _store_res(r_ptr, idx, mask, v, dec, HAS_RES)
    seen = tl.max(tl.where(mask & over, 1, 0), axis=0)
    seen |= tl.max(tl.where(mask & (a >= INF_BITS), 2, 0), axis=0)
    if seen != 0:
        tl.atomic_or(flags_ptr, seen)


@triton.jit
def _put_scale(out_ptr, boff, bits, bmask):
    """Four little-endian bytes of each block's f32 scale at boff."""
    k = tl.arange(0, 4)
    byte = ((bits[:, None] >> (8 * k)[None, :].to(tl.uint32)) & 0xFF).to(tl.uint8)
    tl.store(out_ptr + boff[:, None] + k[None, :], byte, mask=bmask[:, None])


@triton.jit(do_not_specialize=["n", "nblocks", "b"])
def _int_kernel(
    x_ptr, r_ptr, out_ptr, flags_ptr, n, nblocks, b,
    BITS: tl.constexpr, LEVELS: tl.constexpr, HAS_RES: tl.constexpr, G: tl.constexpr,
    HP: tl.constexpr,
):  # fmt: skip
    """G blocks of b elements per program, as pairs: elements 2j and 2j+1 in a [G, HP, 2] tile."""
    blk = tl.program_id(0).to(tl.int64) * G + tl.arange(0, G)
    bmask = blk < nblocks
    start = blk * b
    length = tl.minimum(b, n - start)
    j = 2 * tl.arange(0, HP)[None, :, None] + tl.arange(0, 2)[None, None, :]
    mask = bmask[:, None, None] & (j < length[:, None, None])
    idx = start[:, None, None] + j
    v = _load_v(x_ptr, r_ptr, idx, mask, HAS_RES)
    amax = tl.max(tl.max(v.to(tl.uint32, bitcast=True) & 0x7FFFFFFF, axis=2), axis=1)
    levels = tl.full(amax.shape, LEVELS, tl.float32)
    a = amax.to(tl.float32, bitcast=True)
    finite = amax < INF_BITS
    scale = tl.math.div_rn(a, levels)
    down = scale * levels > FLT_MAX  # q_finite_step: one ulp lower suffices
    scale = tl.where(
        down, (scale.to(tl.uint32, bitcast=True) - 1).to(tl.float32, bitcast=True), scale
    )
    nan = tl.full(amax.shape, NAN_SCALE_BITS, tl.uint32).to(tl.float32, bitcast=True)
    scale = tl.where(finite, scale, nan)
    pre = tl.where(amax < TINY_BITS, TINY_PRE, 1.0)
    inv = tl.math.div_rn(levels, tl.where(a > 0, a * pre, 1.0))
    inv = tl.where(finite & (a > 0), inv, 0.0)
    y = (v * pre[:, None, None]) * inv[:, None, None]
    y = tl.where(finite[:, None, None], y, 0.0)  # v * 0 is NaN for v = Inf
    q = ((y + ROUND_MAGIC) - ROUND_MAGIC).to(tl.int32)
    q = tl.minimum(tl.maximum(q, -LEVELS), LEVELS)
    q = tl.where(finite[:, None, None], q, 0)
    if BITS == 8:
        boff = blk * (4 + b)
    else:
        boff = blk * (4 + b // 2)
    _put_scale(out_ptr, boff, scale.to(tl.uint32, bitcast=True), bmask)
    if BITS == 8:
        tl.store(
            out_ptr + boff[:, None, None] + 4 + j,
            q.to(tl.int8).to(tl.uint8, bitcast=True),
            mask=mask,
        )
    else:
        lo, hi = tl.split(q & 0xF)
        jj = tl.arange(0, HP)[None, :]
        pmask = bmask[:, None] & (2 * jj < length[:, None])
        tl.store(out_ptr + boff[:, None] + 4 + jj, (lo | (hi << 4)).to(tl.uint8), mask=pmask)
    _store_res(r_ptr, idx, mask, v, q.to(tl.float32) * scale[:, None, None], HAS_RES)
    if tl.max(tl.where(bmask & ~finite, 2, 0), axis=0) != 0:
        tl.atomic_or(flags_ptr, 2)


@triton.jit(do_not_specialize=["n", "nblocks", "b"])
def _sign_kernel(
    x_ptr, r_ptr, out_ptr, flags_ptr, n, nblocks, b,
    HAS_RES: tl.constexpr, G: tl.constexpr, BY: tl.constexpr,
):  # fmt: skip
    """G blocks per program; scale = mean |v| from 16 f64 lanes summed in element order."""
    blk = tl.program_id(0).to(tl.int64) * G + tl.arange(0, G)
    bmask = blk < nblocks
    start = blk * b
    length = tl.minimum(b, n - start)
    lane = tl.arange(0, 16)[None, :]
    lanes = tl.zeros([G, 16], tl.float64)
    for row in range(0, tl.cdiv(b, 16)):
        j = row * 16 + lane
        m = bmask[:, None] & (j < length[:, None])
        v = _load_v(x_ptr, r_ptr, start[:, None] + j, m, HAS_RES)
        lanes += tl.abs(v).to(tl.float64)
    half = tl.sum(tl.reshape(lanes, [G, 2, 8]), axis=1)  # lanes j + j+8, then j + j+4, ...
    half = tl.sum(tl.reshape(half, [G, 2, 4]), axis=1)
    half = tl.sum(tl.reshape(half, [G, 2, 2]), axis=1)
    total = tl.sum(half, axis=1)
    mean = (total / length.to(tl.float64)).to(tl.float32)
    sbits = tl.where(total < INF, mean.to(tl.uint32, bitcast=True), NAN_SCALE_BITS)
    boff = blk * (4 + b // 8)
    _put_scale(out_ptr, boff, sbits, bmask)
    j = 8 * tl.arange(0, BY)[None, :, None] + tl.arange(0, 8)[None, None, :]
    mask = bmask[:, None, None] & (j < length[:, None, None])
    idx = start[:, None, None] + j
    v = _load_v(x_ptr, r_ptr, idx, mask, HAS_RES)
    neg = v.to(tl.uint32, bitcast=True) >> 31
    byte = tl.sum(neg << tl.arange(0, 8)[None, None, :].to(tl.uint32), axis=2)
    y = tl.arange(0, BY)[None, :]
    ymask = bmask[:, None] & (8 * y < length[:, None])
    tl.store(out_ptr + boff[:, None] + 4 + y, byte.to(tl.uint8), mask=ymask)
    dec = (sbits[:, None, None] | (neg << 31)).to(tl.float32, bitcast=True)
    _store_res(r_ptr, idx, mask, v, dec, HAS_RES)
    if tl.max(tl.where(bmask & (sbits == NAN_SCALE_BITS), 2, 0), axis=0) != 0:
        tl.atomic_or(flags_ptr, 2)
