/* Shared pieces of the quantizing codecs (fp16, bf16, int8, int4, sign, qsgd, topk):
 * parameter and size rules, element access by dtype, scale rules and the block reductions.
 * Everything a SIMD kernel must reproduce bit for bit lives here, so that the generic and the
 * x86/ paths share the scalar arithmetic (codecs/FORMAT-quant.md has the format). */
#ifndef MPIUCC_Q_COMMON_H
#define MPIUCC_Q_COMMON_H

#include <float.h>

#include "internal.h"

/* Force inlining where a dtype argument is a constant, so that each dtype gets its own loop. */
#if defined(__GNUC__)
#define Q_INLINE static inline __attribute__((always_inline))
#else
#define Q_INLINE static inline
#endif
/* Call F(dtype, ...) with dtype t as a constant. */
#define Q_BY_DTYPE(t, F, ...)                                        \
    do {                                                             \
        switch (t) {                                                 \
        case MPIUCC_DTYPE_F32: F(MPIUCC_DTYPE_F32, __VA_ARGS__); break; \
        case MPIUCC_DTYPE_F64: F(MPIUCC_DTYPE_F64, __VA_ARGS__); break; \
        case MPIUCC_DTYPE_F16: F(MPIUCC_DTYPE_F16, __VA_ARGS__); break; \
        default: F(MPIUCC_DTYPE_BF16, __VA_ARGS__); break;           \
        }                                                            \
    } while (0)

#define Q_BLOCK_DEFAULT 256u /* block_size 0 means this, for every block codec */
#define Q_BLOCK_MIN 8u
#define Q_BLOCK_MAX 65536u
#define Q_LANES 16 /* partial sums of a block reduction: lane = position in block mod 16 */
#define Q_F16_MAX 65504.0f
#define Q_BF16_MAX_BITS 0x7f7f0000u
#define Q_NAN_BITS 0x7fc00000u  /* the NaN written as the scale of a non-finite block */
#define Q_FLAG_SATURATED 0x1u   /* fp16/bf16 aux: a finite value was clamped to the range */
#define Q_SEEN_NONFINITE 0x2u   /* fp16/bf16 kernels' report (not in aux): NaN or Inf met */

static inline uint32_t q_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float q_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline int q_block_ok(uint64_t b) {
    return b >= Q_BLOCK_MIN && b <= Q_BLOCK_MAX && b % 8 == 0;
}
static inline uint32_t q_block_of(const mpiucc_params *p) {
    return p->block_size ? p->block_size : Q_BLOCK_DEFAULT;
}
/* levels 0 means the codec's conventional default: qsgd s = 16 (5-bit codes); topk k = one
 * sixteenth of the block (16 of 256), at least 1. */
#define Q_QSGD_LEVELS_DEFAULT 16u
static inline uint32_t q_levels_of(const mpiucc_params *p) {
    if (p->levels) return p->levels;
    if (p->codec == MPIUCC_CODEC_QSGD) return Q_QSGD_LEVELS_DEFAULT;
    uint32_t k = q_block_of(p) / 16;
    return k ? k : 1;
}
static inline uint64_t q_nblocks(uint64_t n, uint64_t b) { return n / b + (n % b != 0); }
/* Largest count whose payload sizes are computed without overflow (the header allows 2^60). */
#define Q_COUNT_MAX (UINT64_MAX >> 4)
/* payload_bound's answer for an exact payload size: never 0 (which means invalid params), and
 * 0 when the frame would not fit in a size_t. */
static inline size_t q_bound(uint64_t s) {
    if (s > (uint64_t)(SIZE_MAX - 2 * MPIUCC_HEADER_SIZE)) return 0;
    return s ? (size_t)s : 1;
}

/* ---- per-frame scalar rules, shared by all paths ---- */

/* Blocks whose largest |v| is below 2^-64 are coded from v * 2^64 (exact: a power of two, no
 * overflow), so that levels / absmax cannot overflow and the codes keep their precision. */
#define Q_TINY_BITS 0x1f800000u /* 2^-64 */
#define Q_TINY_PRE 18446744073709551616.0f /* 2^64 */

/* A step that decodes finitely: levels * step rounded to f32 must stay finite (so must every
 * smaller code's product). Near FLT_MAX, a / levels can round up far enough that it does
 * not; the step is then lowered by one ulp (once suffices for levels 1..127). */
static inline float q_finite_step(float step, float levels) {
    while (levels * step > FLT_MAX) step = q_float(q_bits(step) - 1);
    return step;
}

/* Scale of an absmax block (int8: levels 127, int4: 7) from the largest |v| as bits. A block
 * holding NaN or +-Inf gets a NaN scale and zero codes, so it decodes to NaN. A value's code
 * is (v * pre) * inv rounded: pre is 1, or 2^64 for a tiny block (see Q_TINY_BITS). */
static inline void q_absmax_scale(uint32_t amax_bits, float levels, float *scale, float *inv,
                                  float *pre) {
    *pre = amax_bits < Q_TINY_BITS ? Q_TINY_PRE : 1.0f;
    if (amax_bits >= 0x7f800000u) {
        *scale = q_float(Q_NAN_BITS);
        *inv = 0.0f;
        return;
    }
    float a = q_float(amax_bits);
    *scale = q_finite_step(a / levels, levels);
    *inv = a > 0.0f ? levels / (a * *pre) : 0.0f;
}

/* Whether an f32 is NaN or +-Inf (all exponent bits set). */
static inline int q_nonfinite(float v) { return (q_bits(v) & 0x7f800000u) == 0x7f800000u; }

/* Whether any block of a written payload has a NaN scale (the non-finite blocks of int8,
 * int4, sign and qsgd). Block k's f32 scale is at k * stride: only the last block is short. */
static inline int q_any_nan_scale(const uint8_t *payload, uint64_t n, uint64_t b, size_t stride) {
    uint32_t nan = 0;
    for (uint64_t k = 0; k < q_nblocks(n, b); k++)
        nan |= (mpiucc_get_u32(payload + k * stride) & 0x7fffffffu) > 0x7f800000u;
    return nan != 0;
}

/* Sum of the Q_LANES partial sums in a fixed tree order; lanes is clobbered. */
static inline double q_lanes_sum(double *lanes) {
    for (int w = Q_LANES / 2; w; w /= 2)
        for (int j = 0; j < w; j++) lanes[j] += lanes[j + w];
    return lanes[0];
}

/* sign: the block's scale from the sum of |v| over its len elements (NaN when not finite). */
static inline float q_mean_scale(double sum, size_t len) {
    return sum < INFINITY ? (float)(sum / (double)len) : q_float(Q_NAN_BITS);
}

/* A residual that is not finite (the value or its decoding was NaN or Inf) is reset to +0,
 * so that one bad step does not poison every later step; the frame itself carries the
 * non-finite value to the receiver. */
static inline float q_res_f32(float r) { return fabsf(r) < INFINITY ? r : 0.0f; }
static inline double q_res_f64(double r) { return fabs(r) < INFINITY ? r : 0.0; }

/* ---- narrowing with saturation (fp16/bf16 outputs and narrow residuals) ---- */

/* f32 -> binary16, round to nearest even; finite values beyond +-65504 become +-65504. */
static inline uint16_t q_f32_to_f16_sat(float f) {
    float a = fabsf(f);
    if (a > Q_F16_MAX && a < INFINITY) f = copysignf(Q_F16_MAX, f);
    return mpiucc_f32_to_f16(f);
}
/* f32 -> bfloat16, round to nearest even; finite values beyond the largest bfloat16
 * (0x7f7f) become it. Same bits as the AVX2 kernel. */
static inline uint16_t q_f32_to_bf16_sat(float f) {
    uint32_t u = q_bits(f), a = u & 0x7fffffffu, s = u & 0x80000000u;
    if (a > 0x7f800000u) return (uint16_t)((u | 0x00400000u) >> 16); /* quiet NaN */
    if (a > Q_BF16_MAX_BITS && a < 0x7f800000u) a = Q_BF16_MAX_BITS;
    a += 0x7fffu + ((a >> 16) & 1u);
    return (uint16_t)((a | s) >> 16);
}
/* binary16 -> f32 with NaNs quieted, as the F16C instruction does. */
static inline float q_f16_to_f32(uint16_t h) {
    float f = mpiucc_f16_to_f32(h);
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) f = q_float(q_bits(f) | 0x00400000u);
    return f;
}

/* f64 -> f32 rounding to odd (truncate, then set the last bit when inexact): a second
 * rounding to a narrower format then equals a single rounding of the f64. */
static inline float q_f64_to_f32_odd(double d) {
    float f = (float)d;
    if ((double)f == d || isnan(d) || fabs(d) > FLT_MAX) return f;
    uint32_t u = q_bits(f);
    if (fabs((double)f) > fabs(d)) u--; /* rounded away from zero: step back */
    return q_float(u | 1u);
}

/* ---- generic element access by dtype ----
 * v = src[i] (+ residual[i]): f32, f16 and bf16 add in f32; f64 adds in f64 and the sum is
 * rounded to f32 (values beyond the f32 range become +-Inf, i.e. non-finite). */
Q_INLINE float q_load_v(mpiucc_dtype t, const void *src, const void *res, size_t i) {
    switch (t) {
    case MPIUCC_DTYPE_F32: {
        float v = ((const float *)src)[i];
        return res ? v + ((const float *)res)[i] : v;
    }
    case MPIUCC_DTYPE_F64: {
        double v = ((const double *)src)[i];
        return (float)(res ? v + ((const double *)res)[i] : v);
    }
    case MPIUCC_DTYPE_F16: {
        float v = q_f16_to_f32(((const uint16_t *)src)[i]);
        return res ? v + q_f16_to_f32(((const uint16_t *)res)[i]) : v;
    }
    default: {
        float v = mpiucc_bf16_to_f32(((const uint16_t *)src)[i]);
        return res ? v + mpiucc_bf16_to_f32(((const uint16_t *)res)[i]) : v;
    }
    }
}

/* residual[i] = v - dec, where v is what q_load_v returned for i (recomputed here in f64
 * for f64 data, before residual[i] is overwritten); not finite -> 0. */
Q_INLINE void q_store_res(mpiucc_dtype t, const void *src, void *res, size_t i, float v,
                               float dec) {
    switch (t) {
    case MPIUCC_DTYPE_F32: ((float *)res)[i] = q_res_f32(v - dec); break;
    case MPIUCC_DTYPE_F64: {
        double dv = ((const double *)src)[i] + ((double *)res)[i];
        ((double *)res)[i] = q_res_f64(dv - (double)dec);
        break;
    }
    case MPIUCC_DTYPE_F16: ((uint16_t *)res)[i] = q_f32_to_f16_sat(q_res_f32(v - dec)); break;
    default: ((uint16_t *)res)[i] = q_f32_to_bf16_sat(q_res_f32(v - dec)); break;
    }
}

/* dst[i] = y, or dst[i] += y when add (computed in f32, or f64 for f64 data). A finite y
 * beyond the f16 or bf16 range (bf16 65504 rounds up to 65536; a qsgd level can exceed the
 * block's largest value) saturates, so that a finite input never decodes to Inf. */
Q_INLINE void q_store_out(mpiucc_dtype t, void *dst, size_t i, float y, int add) {
    switch (t) {
    case MPIUCC_DTYPE_F32:
        if (add) ((float *)dst)[i] += y; else ((float *)dst)[i] = y;
        break;
    case MPIUCC_DTYPE_F64:
        if (add) ((double *)dst)[i] += (double)y; else ((double *)dst)[i] = (double)y;
        break;
    case MPIUCC_DTYPE_F16: {
        uint16_t *d = (uint16_t *)dst;
        d[i] = add ? mpiucc_f32_to_f16(q_f16_to_f32(d[i]) + y) : q_f32_to_f16_sat(y);
        break;
    }
    default: {
        uint16_t *d = (uint16_t *)dst;
        d[i] = add ? mpiucc_f32_to_bf16(mpiucc_bf16_to_f32(d[i]) + y) : q_f32_to_bf16_sat(y);
        break;
    }
    }
}

/* Round to nearest even and floor, exact for |y| < 2^22 (every code here is below 2^8), with
 * no libm call; the SIMD kernels use roundps / floorps, which give the same integers. */
static inline int q_rint(float y) { return (int)((y + 12582912.0f) - 12582912.0f); }
static inline int q_floor(float y) {
    int i = (int)y; /* toward zero; one less where that went up (branch free) */
    return i - ((float)i > y);
}

/* mpiucc_random_unit(seed, i) with the key of i >> 32 cached across calls. */
typedef struct {
    uint64_t seed, hi;
    uint32_t key;
} q_rng;
static inline q_rng q_rng_init(uint64_t seed) {
    q_rng r = {seed, UINT64_MAX, 0}; /* no index has i >> 32 == UINT64_MAX */
    return r;
}
static inline float q_rng_unit(q_rng *r, uint64_t i) {
    if ((i >> 32) != r->hi) {
        r->hi = i >> 32;
        r->key = mpiucc_random_key(r->seed, r->hi);
    }
    return (float)(mpiucc_hash32((uint32_t)i + r->key) >> 8) * (1.0f / 16777216.0f);
}


/* Code of element i (value v) in an absmax block: (v * pre) * inv rounded to nearest even, or
 * stochastically (floor(y + u), u its random number), clamped to [-levels, levels]. */
static inline int q_int_code(float v, float pre, float inv, float levels, int stochastic,
                             q_rng *rng, uint64_t i) {
    float y = (v * pre) * inv; /* |y| <= levels (1 + 2^-23): inv is levels / (absmax pre) */
    int q = stochastic ? q_floor(y + q_rng_unit(rng, i)) : q_rint(y), l = (int)levels;
    return q < -l ? -l : q > l ? l : q;
}

/* qsgd: the block's norm from its sum of squares (NaN when not finite, capped at FLT_MAX),
 * the multiplier inv = s / (norm pre) (0 for a zero or non-finite norm), pre (1, or 2^64 for a
 * norm below 2^-64, as for Q_TINY_BITS) and the step. A level is |v| * pre * inv rounded. */
typedef struct {
    float norm, inv, pre, step;
    int finite;
} q_qsgd_block;
static inline q_qsgd_block q_qsgd_scales(double sumsq, uint32_t levels) {
    q_qsgd_block b;
    float s = (float)levels;
    if (sumsq < INFINITY) {
        double r = sqrt(sumsq);
        b.norm = r <= FLT_MAX ? (float)r : FLT_MAX;
    } else {
        b.norm = q_float(Q_NAN_BITS);
    }
    while ((b.norm / s) * s > FLT_MAX) /* decoding multiplies norm / s by up to s */
        b.norm = q_float(q_bits(b.norm) - 1);
    b.finite = b.norm == b.norm;
    b.inv = 0.0f;
    b.pre = b.norm < q_float(Q_TINY_BITS) ? Q_TINY_PRE : 1.0f;
    if (b.norm > 0.0f) b.inv = s / (b.norm * b.pre);
    b.step = b.norm / s;
    return b;
}
/* qsgd code of element i (value v): s + l, or s - l when v's sign bit is set; a non-finite
 * block has l = 0 everywhere. */
static inline int q_qsgd_code(const q_qsgd_block *b, float v, uint32_t levels, int stochastic,
                              q_rng *rng, uint64_t i) {
    float y = b->finite ? (fabsf(v) * b->pre) * b->inv : 0.0f; /* y <= s (1 + 2^-23) */
    int l = stochastic ? q_floor(y + q_rng_unit(rng, i)) : q_rint(y);
    if (l > (int)levels) l = (int)levels;
    return q_bits(v) >> 31 ? (int)levels - l : (int)levels + l;
}

/* ---- AVX2 kernels (codecs/src/x86/), f32 data only; same bytes as the generic path ---- */
#if MPIUCC_X86
/* *seen |= Q_FLAG_SATURATED, Q_SEEN_NONFINITE for what the encoding met. */
void q_fp16_encode_avx2(const float *src, float *res, size_t n, uint8_t *out, uint32_t *seen);
void q_fp16_decode_avx2(const uint8_t *in, float *dst, size_t n, int add);
void q_bf16_encode_avx2(const float *src, float *res, size_t n, uint8_t *out, uint32_t *seen);
void q_bf16_decode_avx2(const uint8_t *in, float *dst, size_t n, int add);
/* The whole int8 (bits 8) or int4 (bits 4) payload of n elements in blocks of block. */
void q_int_encode_avx2(const float *src, float *res, size_t n, size_t block, int bits,
                       int stochastic, uint64_t seed, uint8_t *out);
void q_int_decode_block_avx2(const uint8_t *in, float *dst, size_t len, int bits, int add);
void q_sign_encode_block_avx2(const float *src, float *res, size_t len, uint8_t *out);
void q_sign_decode_block_avx2(const uint8_t *in, float *dst, size_t len, int add);
/* One qsgd block (codes w bits wide); out + room is the end of the payload: bytes up to it
 * may be written early and are rewritten by the blocks that follow. */
void q_qsgd_encode_block_avx2(const float *src, float *res, size_t len, uint64_t base,
                              uint32_t levels, int w, int stochastic, q_rng *rng, uint8_t *out,
                              size_t room);
void q_qsgd_decode_block_avx2(const uint8_t *in, float *dst, size_t len, uint32_t levels, int w,
                              int add, size_t room);
#endif

/* ---- the quantizers' kernel table ----
 * Whole payloads, one entry per codec and direction, so that a codec picks its kernels once
 * per call. Every table writes the same bytes (tests compare them, MPIUCC_FORCE_GENERIC picks
 * the generic one). qsgd's size is the whole payload's: SIMD stores may reach up to it. */
typedef struct {
    void (*half_encode)(mpiucc_dtype t, int fp16, const void *src, void *res, size_t n,
                        uint8_t *out, uint32_t *seen);
    void (*half_decode)(mpiucc_dtype t, int fp16, const uint8_t *in, void *dst, size_t n,
                        int add);
    void (*int_encode)(mpiucc_dtype t, const void *src, void *res, size_t n, size_t b, int bits,
                       int stochastic, uint64_t seed, uint8_t *out);
    void (*int_decode)(mpiucc_dtype t, const uint8_t *in, void *dst, size_t n, size_t b,
                       int bits, int add);
    void (*sign_encode)(mpiucc_dtype t, const void *src, void *res, size_t n, size_t b,
                        uint8_t *out);
    void (*sign_decode)(mpiucc_dtype t, const uint8_t *in, void *dst, size_t n, size_t b,
                        int add);
    void (*qsgd_encode)(mpiucc_dtype t, const void *src, void *res, size_t n, size_t b,
                        uint32_t levels, int w, int stochastic, uint64_t seed, uint8_t *out,
                        size_t size);
    void (*qsgd_decode)(mpiucc_dtype t, const uint8_t *in, void *dst, size_t n, size_t b,
                        uint32_t levels, int w, int add, size_t size);
} q_kernels;

/* The generic entries (every dtype), defined in the codecs' own files. */
void q_half_encode_generic(mpiucc_dtype t, int fp16, const void *src, void *res, size_t n,
                           uint8_t *out, uint32_t *seen);
void q_half_decode_generic(mpiucc_dtype t, int fp16, const uint8_t *in, void *dst, size_t n,
                           int add);
void q_int_encode_generic(mpiucc_dtype t, const void *src, void *res, size_t n, size_t b,
                          int bits, int stochastic, uint64_t seed, uint8_t *out);
void q_int_decode_generic(mpiucc_dtype t, const uint8_t *in, void *dst, size_t n, size_t b,
                          int bits, int add);
void q_sign_encode_generic(mpiucc_dtype t, const void *src, void *res, size_t n, size_t b,
                           uint8_t *out);
void q_sign_decode_generic(mpiucc_dtype t, const uint8_t *in, void *dst, size_t n, size_t b,
                           int add);
void q_qsgd_encode_generic(mpiucc_dtype t, const void *src, void *res, size_t n, size_t b,
                           uint32_t levels, int w, int stochastic, uint64_t seed, uint8_t *out,
                           size_t size);
void q_qsgd_decode_generic(mpiucc_dtype t, const uint8_t *in, void *dst, size_t n, size_t b,
                           uint32_t levels, int w, int add, size_t size);

extern const q_kernels q_kernels_generic;
extern const q_kernels q_kernels_avx2; /* x86 builds only; f32 data only */

/* The table for data of dtype t at the SIMD level in force (q_dispatch.c). */
const q_kernels *q_kernels_for(mpiucc_dtype t);

#endif /* MPIUCC_Q_COMMON_H */
