/* ebq_avx2.c: AVX2 kernels of ebq (compiled with -mavx2 alone, chosen at run time).
 *
 * Output is bit-identical to the generic kernels: a lane is taken from the vector path only
 * when a filter proves that the scalar decision (ebq_decide_*) picks the same index; every
 * other lane is decided by that scalar function itself. */
#include <float.h>
#include <immintrin.h>

#include "../ebq.h"

/* ---- quantize ---- */

static inline __m256i zigzag8(__m256i d) {
    return _mm256_xor_si256(_mm256_slli_epi32(d, 1), _mm256_srai_epi32(d, 31));
}

/* z of 8 indices (DELTA: minus the previous index; *carry holds the last index in every
 * lane). */
static inline __m256i predict8(__m256i q, int delta, __m256i *carry) {
    if (!delta) return zigzag8(q);
    const __m256i rot = _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6);
    __m256i prev = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(q, rot), *carry, 0x01);
    *carry = _mm256_permutevar8x32_epi32(q, _mm256_set1_epi32(7));
    return zigzag8(_mm256_sub_epi32(q, prev));
}

/* 8 f32 values v: indices, new residuals, and the lanes the vector path may keep. */
static inline int quant8_f32(const ebq_grid *g, __m256 v, __m256i *q, __m256 *r) {
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 t = _mm256_round_ps(_mm256_mul_ps(v, _mm256_set1_ps(g->inv_f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 inr = _mm256_cmp_ps(_mm256_and_ps(t, absm), _mm256_set1_ps((float)EBQ_MAX_Q),
                               _CMP_LT_OQ);
    __m256i qi = _mm256_and_si256(_mm256_cvttps_epi32(t), _mm256_castps_si256(inr));
    __m256d step = _mm256_set1_pd(g->step);
    __m256d ylo = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(qi)), step);
    __m256d yhi = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(qi, 1)), step);
    __m256 y = _mm256_set_m128(_mm256_cvtpd_ps(yhi), _mm256_cvtpd_ps(ylo));
    __m256 d = _mm256_sub_ps(v, y);
    __m256 ok = _mm256_and_ps(
        _mm256_cmp_ps(_mm256_and_ps(d, absm), _mm256_set1_ps(g->tol_f), _CMP_LE_OQ), inr);
    *q = qi;
    *r = d;
    return _mm256_movemask_ps(ok);
}

static inline int quant4_f64(const ebq_grid *g, __m256d v, __m128i *q, __m256d *r) {
    const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    __m256d t = _mm256_round_pd(_mm256_mul_pd(v, _mm256_set1_pd(g->inv_d)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d inr = _mm256_cmp_pd(_mm256_and_pd(t, absm), _mm256_set1_pd((double)EBQ_MAX_Q),
                                _CMP_LT_OQ);
    __m128i qi = _mm256_cvttpd_epi32(_mm256_and_pd(t, inr));
    __m256d y = _mm256_mul_pd(_mm256_cvtepi32_pd(qi), _mm256_set1_pd(g->step));
    __m256d s = _mm256_sub_pd(v, y);
    /* |s| < eb decides (FORMAT.md); so does s == 0 (x == y), also when eb is 0 */
    __m256d as = _mm256_and_pd(s, absm);
    __m256d ok = _mm256_and_pd(
        _mm256_or_pd(_mm256_cmp_pd(as, _mm256_set1_pd(g->eb), _CMP_LT_OQ),
                     _mm256_cmp_pd(as, _mm256_setzero_pd(), _CMP_EQ_OQ)),
        inr);
    *q = qi;
    *r = s;
    return _mm256_movemask_pd(ok);
}

static void quantize_avx2(const ebq_grid *g, const void *src, void *residual, size_t i0,
                          size_t m, int32_t *prev, uint32_t *z, uint32_t *ors, int32_t *q,
                          ebq_sink *sink) {
    __m256i carry = _mm256_set1_epi32(*prev);
    size_t i = 0;
    if (g->dtype == MPIUCC_DTYPE_F32) {
        const float *x = (const float *)src + i0;
        float *res = residual ? (float *)residual + i0 : NULL;
        for (; i + 8 <= m; i += 8) {
            __m256 v = _mm256_loadu_ps(x + i), r;
            if (res) v = _mm256_add_ps(v, _mm256_loadu_ps(res + i));
            __m256i qi;
            int ok = quant8_f32(g, v, &qi, &r);
            if (ok != 0xff) { /* the scalar decision for the other lanes */
                float vv[8], rr[8];
                int32_t qq[8];
                _mm256_storeu_ps(vv, v);
                _mm256_storeu_ps(rr, r);
                _mm256_storeu_si256((__m256i *)qq, qi);
                for (int j = 0; j < 8; j++)
                    if (!(ok >> j & 1)) qq[j] = ebq_quant1_f32(g, vv[j], i0 + i + j, sink, &rr[j]);
                qi = _mm256_loadu_si256((const __m256i *)qq);
                r = _mm256_loadu_ps(rr);
            }
            if (res) _mm256_storeu_ps(res + i, r);
            if (q) _mm256_storeu_si256((__m256i *)(q + i), qi);
            _mm256_storeu_si256((__m256i *)(z + i), predict8(qi, g->delta, &carry));
        }
    } else {
        const double *x = (const double *)src + i0;
        double *res = residual ? (double *)residual + i0 : NULL;
        for (; i + 8 <= m; i += 8) {
            __m256d v0 = _mm256_loadu_pd(x + i), v1 = _mm256_loadu_pd(x + i + 4), r0, r1;
            if (res) {
                v0 = _mm256_add_pd(v0, _mm256_loadu_pd(res + i));
                v1 = _mm256_add_pd(v1, _mm256_loadu_pd(res + i + 4));
            }
            __m128i q0, q1;
            int ok = quant4_f64(g, v0, &q0, &r0) | quant4_f64(g, v1, &q1, &r1) << 4;
            __m256i qi = _mm256_set_m128i(q1, q0);
            if (ok != 0xff) {
                double vv[8], rr[8];
                int32_t qq[8];
                _mm256_storeu_pd(vv, v0);
                _mm256_storeu_pd(vv + 4, v1);
                _mm256_storeu_pd(rr, r0);
                _mm256_storeu_pd(rr + 4, r1);
                _mm256_storeu_si256((__m256i *)qq, qi);
                for (int j = 0; j < 8; j++)
                    if (!(ok >> j & 1)) qq[j] = ebq_quant1_f64(g, vv[j], i0 + i + j, sink, &rr[j]);
                qi = _mm256_loadu_si256((const __m256i *)qq);
                r0 = _mm256_loadu_pd(rr);
                r1 = _mm256_loadu_pd(rr + 4);
            }
            if (res) {
                _mm256_storeu_pd(res + i, r0);
                _mm256_storeu_pd(res + i + 4, r1);
            }
            if (q) _mm256_storeu_si256((__m256i *)(q + i), qi);
            _mm256_storeu_si256((__m256i *)(z + i), predict8(qi, g->delta, &carry));
        }
    }
    int32_t p = _mm256_cvtsi256_si32(carry);
    for (; i < m; i++) { /* the tail, scalar */
        int32_t qi;
        if (g->dtype == MPIUCC_DTYPE_F32) {
            float *r = residual ? (float *)residual + i0 + i : NULL, rn;
            float v = ((const float *)src)[i0 + i];
            qi = ebq_quant1_f32(g, r ? v + *r : v, i0 + i, sink, &rn);
            if (r) *r = rn;
        } else {
            double *r = residual ? (double *)residual + i0 + i : NULL, rn;
            double v = ((const double *)src)[i0 + i];
            qi = ebq_quant1_f64(g, r ? v + *r : v, i0 + i, sink, &rn);
            if (r) *r = rn;
        }
        if (q) q[i] = qi;
        z[i] = ebq_zigzag(g->delta ? (int32_t)((uint32_t)qi - (uint32_t)p) : qi);
        p = qi;
    }
    size_t padded = (m + EBQ_BLOCK - 1) / EBQ_BLOCK * EBQ_BLOCK;
    for (; i < padded; i++) z[i] = 0;
    for (size_t b = 0; b < padded / EBQ_BLOCK; b++) {
        const __m256i *zb = (const __m256i *)(z + b * EBQ_BLOCK);
        __m256i o = _mm256_or_si256(
            _mm256_or_si256(_mm256_loadu_si256(zb), _mm256_loadu_si256(zb + 1)),
            _mm256_or_si256(_mm256_loadu_si256(zb + 2), _mm256_loadu_si256(zb + 3)));
        __m128i h = _mm_or_si128(_mm256_castsi256_si128(o), _mm256_extracti128_si256(o, 1));
        h = _mm_or_si128(h, _mm_shuffle_epi32(h, 0x4e));
        h = _mm_or_si128(h, _mm_shuffle_epi32(h, 0xb1));
        ors[b] = (uint32_t)_mm_cvtsi128_si32(h);
    }
    *prev = p;
}

/* ---- decode ---- */

/* 8 values of width W (<= 24) starting at byte p: two 16-byte loads, one byte shuffle,
 * per-lane shifts. Reads up to p + W/2 + 16. */
#define SB(k, W) ((k) < 4 ? ((k) * (W)) / 8 : ((k) * (W)) / 8 - (4 * (W)) / 8)
#define SB4(k, W) (char)SB(k, W), (char)(SB(k, W) + 1), (char)(SB(k, W) + 2), (char)(SB(k, W) + 3)
static inline __attribute__((always_inline)) __m256i unpack8(const uint8_t *p, const int W) {
    __m128i lo = _mm_loadu_si128((const __m128i *)p);
    __m128i hi = _mm_loadu_si128((const __m128i *)(p + (4 * W) / 8));
    __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    v = _mm256_shuffle_epi8(v, _mm256_setr_epi8(SB4(0, W), SB4(1, W), SB4(2, W), SB4(3, W),
                                                SB4(4, W), SB4(5, W), SB4(6, W), SB4(7, W)));
    v = _mm256_srlv_epi32(v, _mm256_setr_epi32(0, W % 8, (2 * W) % 8, (3 * W) % 8,
                                               (4 * W) % 8, (5 * W) % 8, (6 * W) % 8,
                                               (7 * W) % 8));
    return _mm256_and_si256(v, _mm256_set1_epi32((1 << W) - 1));
}

static inline __m256i unzigzag8(__m256i z) {
    return _mm256_xor_si256(_mm256_srli_epi32(z, 1),
                            _mm256_sub_epi32(_mm256_setzero_si256(),
                                             _mm256_and_si256(z, _mm256_set1_epi32(1))));
}

/* Inclusive prefix sum of 8 lanes plus the carry; the carry becomes the last lane. */
static inline __m256i prefix8(__m256i d, __m256i *carry) {
    d = _mm256_add_epi32(d, _mm256_slli_si256(d, 4));
    d = _mm256_add_epi32(d, _mm256_slli_si256(d, 8));
    __m256i lane3 = _mm256_permutevar8x32_epi32(d, _mm256_set1_epi32(3));
    d = _mm256_add_epi32(d, _mm256_blend_epi32(_mm256_setzero_si256(), lane3, 0xf0));
    d = _mm256_add_epi32(d, *carry);
    *carry = _mm256_permutevar8x32_epi32(d, _mm256_set1_epi32(7));
    return d;
}

static inline void store8(const ebq_grid *g, __m256i q, void *dst, int add) {
    __m256d step = _mm256_set1_pd(g->step);
    __m256d ylo = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(q)), step);
    __m256d yhi = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(q, 1)), step);
    if (g->dtype == MPIUCC_DTYPE_F32) {
        float *d = (float *)dst;
        __m256 y = _mm256_set_m128(_mm256_cvtpd_ps(yhi), _mm256_cvtpd_ps(ylo));
        if (add) y = _mm256_add_ps(_mm256_loadu_ps(d), y);
        _mm256_storeu_ps(d, y);
    } else {
        double *d = (double *)dst;
        if (add) {
            ylo = _mm256_add_pd(_mm256_loadu_pd(d), ylo);
            yhi = _mm256_add_pd(_mm256_loadu_pd(d + 4), yhi);
        }
        _mm256_storeu_pd(d, ylo);
        _mm256_storeu_pd(d + 4, yhi);
    }
}

#define UNPACK_CASE(W)                     \
    case W:                                \
        zv[0] = unpack8(packed, W);        \
        zv[1] = unpack8(packed + W, W);    \
        zv[2] = unpack8(packed + 2 * W, W); \
        zv[3] = unpack8(packed + 3 * W, W); \
        break;

/* The 32 z values of a block of width w at packed (bytes up to end readable). */
static inline void block_z(const uint8_t *packed, unsigned w, const uint8_t *end,
                           __m256i zv[4]) {
    if (w <= 24 && (size_t)(end - packed) >= 4u * w + 16) {
        switch (w) {
        case 0: zv[0] = zv[1] = zv[2] = zv[3] = _mm256_setzero_si256(); break;
            UNPACK_CASE(1) UNPACK_CASE(2) UNPACK_CASE(3) UNPACK_CASE(4) UNPACK_CASE(5)
            UNPACK_CASE(6) UNPACK_CASE(7) UNPACK_CASE(8) UNPACK_CASE(9) UNPACK_CASE(10)
            UNPACK_CASE(11) UNPACK_CASE(12) UNPACK_CASE(13) UNPACK_CASE(14) UNPACK_CASE(15)
            UNPACK_CASE(16) UNPACK_CASE(17) UNPACK_CASE(18) UNPACK_CASE(19) UNPACK_CASE(20)
            UNPACK_CASE(21) UNPACK_CASE(22) UNPACK_CASE(23) UNPACK_CASE(24)
        }
    } else {
        uint32_t z[EBQ_BLOCK];
        ebq_unpack32(packed, w, z);
        for (int j = 0; j < 4; j++) zv[j] = _mm256_loadu_si256((const __m256i *)(z + 8 * j));
    }
}

static void decode_avx2(const ebq_grid *g, const uint8_t *widths, const uint8_t *packed,
                        const uint8_t *end, size_t n, void *dst, int add) {
    __m256i carry = _mm256_setzero_si256(), zv[4];
    size_t es = g->es, full = n / EBQ_BLOCK;
    for (size_t b = 0; b < full; b++) {
        unsigned w = widths[b];
        uint8_t *d = (uint8_t *)dst + b * EBQ_BLOCK * es;
        if (!w && !g->delta && !add) { /* a whole block of zeros */
            memset(d, 0, EBQ_BLOCK * es);
            continue;
        }
        block_z(packed, w, end, zv);
        packed += 4u * w;
        for (int j = 0; j < 4; j++) {
            __m256i q = unzigzag8(zv[j]);
            if (g->delta) q = prefix8(q, &carry);
            store8(g, q, d + 8 * j * es, add);
        }
    }
    if (n % EBQ_BLOCK) { /* the last, partial block */
        uint32_t z[EBQ_BLOCK];
        int32_t prev = _mm256_cvtsi256_si32(carry);
        ebq_unpack32(packed, widths[full], z);
        ebq_dequant_generic(g, z, n % EBQ_BLOCK, &prev, (uint8_t *)dst + full * EBQ_BLOCK * es,
                            add);
    }
}

static void dequant_avx2(const ebq_grid *g, const uint32_t *z, size_t m, int32_t *prev,
                         void *dst, int add) {
    if (m != EBQ_BLOCK) {
        ebq_dequant_generic(g, z, m, prev, dst, add);
        return;
    }
    __m256i carry = _mm256_set1_epi32(*prev), q = carry;
    for (int j = 0; j < 4; j++) {
        q = unzigzag8(_mm256_loadu_si256((const __m256i *)(z + 8 * j)));
        if (g->delta) q = prefix8(q, &carry);
        store8(g, q, (uint8_t *)dst + 8 * j * g->es, add);
    }
    *prev = _mm256_extract_epi32(q, 7);
}

/* ---- the index domain (ebq_add) ---- */

static void block_indices_avx2(const uint8_t *packed, unsigned w, const uint8_t *end,
                               int delta, int32_t *prev, int32_t *q) {
    __m256i zv[4], carry = _mm256_set1_epi32(*prev);
    block_z(packed, w, end, zv);
    for (int j = 0; j < 4; j++) {
        __m256i v = unzigzag8(zv[j]);
        if (delta) v = prefix8(v, &carry);
        _mm256_storeu_si256((__m256i *)(q + 8 * j), v);
    }
    *prev = q[EBQ_BLOCK - 1];
}

static uint32_t sum_block_avx2(const int32_t *qa, const int32_t *qb, int delta, int32_t *prev,
                               uint32_t *z, int *overflow) {
    __m256i carry = _mm256_set1_epi32(*prev), o = _mm256_setzero_si256(), ov = o;
    for (int j = 0; j < 4; j++) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(qa + 8 * j));
        __m256i b = _mm256_loadu_si256((const __m256i *)(qb + 8 * j));
        __m256i s = _mm256_add_epi32(a, b);
        ov = _mm256_or_si256(ov, _mm256_and_si256(_mm256_xor_si256(s, a), _mm256_xor_si256(s, b)));
        __m256i zj = predict8(s, delta, &carry);
        _mm256_storeu_si256((__m256i *)(z + 8 * j), zj);
        o = _mm256_or_si256(o, zj);
        if (j == 3) *prev = _mm256_extract_epi32(s, 7);
    }
    *overflow = _mm256_movemask_ps(_mm256_castsi256_ps(ov)) != 0;
    __m128i h = _mm_or_si128(_mm256_castsi256_si128(o), _mm256_extracti128_si256(o, 1));
    h = _mm_or_si128(h, _mm_shuffle_epi32(h, 0x4e));
    h = _mm_or_si128(h, _mm_shuffle_epi32(h, 0xb1));
    return (uint32_t)_mm_cvtsi128_si32(h);
}

/* ---- min / max of the finite values ---- */

static int minmax_avx2(mpiucc_dtype t, const void *src, const void *residual, size_t n,
                       double *mn, double *mx) {
    double lo = INFINITY, hi = -INFINITY;
    size_t i = 0;
    if (t == MPIUCC_DTYPE_F32) {
        const float *x = (const float *)src, *r = (const float *)residual;
        const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
        const __m256 pinf = _mm256_set1_ps(INFINITY), ninf = _mm256_set1_ps(-INFINITY);
        const __m256 fmax = _mm256_set1_ps(FLT_MAX);
        __m256 vlo = pinf, vhi = ninf;
        for (; i + 8 <= n; i += 8) {
            __m256 v = _mm256_loadu_ps(x + i);
            if (r) v = _mm256_add_ps(v, _mm256_loadu_ps(r + i));
            __m256 fin = _mm256_cmp_ps(_mm256_and_ps(v, absm), fmax, _CMP_LE_OQ);
            vlo = _mm256_min_ps(vlo, _mm256_blendv_ps(pinf, v, fin));
            vhi = _mm256_max_ps(vhi, _mm256_blendv_ps(ninf, v, fin));
        }
        float a[8], b[8];
        _mm256_storeu_ps(a, vlo);
        _mm256_storeu_ps(b, vhi);
        for (int j = 0; j < 8; j++) {
            if (a[j] < lo) lo = a[j];
            if (b[j] > hi) hi = b[j];
        }
        for (; i < n; i++) {
            float f = r ? x[i] + r[i] : x[i];
            if (!(fabsf(f) <= FLT_MAX)) continue;
            if (f < lo) lo = f;
            if (f > hi) hi = f;
        }
    } else {
        const double *x = (const double *)src, *r = (const double *)residual;
        const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
        const __m256d pinf = _mm256_set1_pd(INFINITY), ninf = _mm256_set1_pd(-INFINITY);
        const __m256d dmax = _mm256_set1_pd(DBL_MAX);
        __m256d vlo = pinf, vhi = ninf;
        for (; i + 4 <= n; i += 4) {
            __m256d v = _mm256_loadu_pd(x + i);
            if (r) v = _mm256_add_pd(v, _mm256_loadu_pd(r + i));
            __m256d fin = _mm256_cmp_pd(_mm256_and_pd(v, absm), dmax, _CMP_LE_OQ);
            vlo = _mm256_min_pd(vlo, _mm256_blendv_pd(pinf, v, fin));
            vhi = _mm256_max_pd(vhi, _mm256_blendv_pd(ninf, v, fin));
        }
        double a[4], b[4];
        _mm256_storeu_pd(a, vlo);
        _mm256_storeu_pd(b, vhi);
        for (int j = 0; j < 4; j++) {
            if (a[j] < lo) lo = a[j];
            if (b[j] > hi) hi = b[j];
        }
        for (; i < n; i++) {
            double f = r ? x[i] + r[i] : x[i];
            if (!(fabs(f) <= DBL_MAX)) continue;
            if (f < lo) lo = f;
            if (f > hi) hi = f;
        }
    }
    *mn = lo <= hi ? lo : 0.0;
    *mx = lo <= hi ? hi : 0.0;
    return lo <= hi;
}

const ebq_kernels ebq_kernels_avx2 = {quantize_avx2, decode_avx2, minmax_avx2,
                                      block_indices_avx2, sum_block_avx2, dequant_avx2};
