/* AVX2 kernels of int8 and int4 for f32 data; same bytes as q_int.c. */
#include "q_avx2.h"

typedef struct {
    __m256 pre, inv, scale, lo, hi;
    int stochastic;
    q_rng *rng;
} int_ctx;

/* Codes of v = elements i .. i+7 as int32; *dec receives their decoded values. */
Q_INLINE __m256i codes8(int_ctx *c, __m256 v, uint64_t i, __m256 *dec) {
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(v, c->pre), c->inv);
    if (c->stochastic)
        y = _mm256_floor_ps(_mm256_add_ps(y, qv_rand8(c->rng, i)));
    else
        y = _mm256_round_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    if (c->stochastic) /* y + u may round to levels + 1 or -levels - 1; y alone cannot */
        y = _mm256_min_ps(_mm256_max_ps(y, c->lo), c->hi);
    __m256i q = _mm256_cvttps_epi32(y);
    if (dec) *dec = _mm256_mul_ps(_mm256_cvtepi32_ps(q), c->scale);
    return q;
}

/* 32 int32 codes (4 vectors) -> 32 bytes in element order */
static inline __m256i pack32(__m256i a, __m256i b, __m256i c, __m256i d) {
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}
/* 8 int32 codes -> 8 bytes in the low half */
static inline __m128i pack8(__m256i a) {
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    return _mm_packs_epi16(w, w);
}
/* 16 code bytes (as 8 16-bit pairs) -> 8 bytes of nibbles in the low half */
static inline __m128i nibbles(__m128i bytes) {
    __m128i n = _mm_and_si128(bytes, _mm_set1_epi16(0x0f0f));
    n = _mm_and_si128(_mm_or_si128(n, _mm_srli_epi16(n, 4)), _mm_set1_epi16(0x00ff));
    return _mm_packus_epi16(n, n);
}

/* First pass of a block: the largest |v| as bits (NaN > Inf > finite), in every lane. */
Q_INLINE __m256i scan_block(const float *src, const float *res, size_t len) {
    size_t len8 = len & ~(size_t)7, i = 0;
    __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
    for (; i + 32 <= len8; i += 32) {
        m0 = _mm256_max_epi32(m0, qv_absbits(qv_load(src, res, i)));
        m1 = _mm256_max_epi32(m1, qv_absbits(qv_load(src, res, i + 8)));
        m2 = _mm256_max_epi32(m2, qv_absbits(qv_load(src, res, i + 16)));
        m3 = _mm256_max_epi32(m3, qv_absbits(qv_load(src, res, i + 24)));
    }
    for (; i < len8; i += 8) m0 = _mm256_max_epi32(m0, qv_absbits(qv_load(src, res, i)));
    for (; i < len; i++) { /* the short last block's tail */
        uint32_t a = q_bits(res ? src[i] + res[i] : src[i]) & 0x7fffffffu;
        m1 = _mm256_max_epi32(m1, _mm256_set1_epi32((int)a));
    }
    m0 = _mm256_max_epi32(_mm256_max_epi32(m0, m1), _mm256_max_epi32(m2, m3));
    m0 = _mm256_max_epi32(m0, _mm256_permute2x128_si256(m0, m0, 0x01));
    m0 = _mm256_max_epi32(m0, _mm256_shuffle_epi32(m0, 0x4e));
    return _mm256_max_epi32(m0, _mm256_shuffle_epi32(m0, 0xb1));
}

/* Second pass of a block: its codes (and residuals) at scale / inv. */
Q_INLINE void quant_block(const float *src, float *res, size_t len, uint64_t base, int bits,
                          int stochastic, q_rng *rng, __m256 sv, __m256 pv, __m256 iv,
                          uint8_t *codes) {
    size_t len8 = len & ~(size_t)7, i = 0;
    float levels = bits == 8 ? 127.0f : 7.0f;
    float scale = _mm256_cvtss_f32(sv), inv = _mm256_cvtss_f32(iv), pre = _mm256_cvtss_f32(pv);
    int_ctx c = {pv, iv, sv, _mm256_set1_ps(-levels), _mm256_set1_ps(levels), stochastic, rng};
    __m256 d0, d1, d2, d3;
    __m256 *pd0 = res ? &d0 : NULL, *pd1 = res ? &d1 : NULL, *pd2 = res ? &d2 : NULL,
           *pd3 = res ? &d3 : NULL;
    for (; i + 32 <= len8; i += 32) {
        __m256 v0 = qv_load(src, res, i), v1 = qv_load(src, res, i + 8);
        __m256 v2 = qv_load(src, res, i + 16), v3 = qv_load(src, res, i + 24);
        __m256i p = pack32(codes8(&c, v0, base + i, pd0), codes8(&c, v1, base + i + 8, pd1),
                           codes8(&c, v2, base + i + 16, pd2), codes8(&c, v3, base + i + 24, pd3));
        if (bits == 8) {
            QV_ST256(codes + i, p);
        } else {
            __m128i lo = nibbles(_mm256_castsi256_si128(p));
            __m128i hi = nibbles(_mm256_extracti128_si256(p, 1));
            QV_ST128(codes + i / 2, _mm_unpacklo_epi64(lo, hi));
        }
        if (res) {
            qv_put_res(res + i, v0, d0);
            qv_put_res(res + i + 8, v1, d1);
            qv_put_res(res + i + 16, v2, d2);
            qv_put_res(res + i + 24, v3, d3);
        }
    }
    for (; i < len8; i += 8) {
        __m256 v0 = qv_load(src, res, i);
        __m128i p = pack8(codes8(&c, v0, base + i, pd0));
        if (bits == 8) {
            _mm_storel_epi64((__m128i *)(void *)(codes + i), p);
        } else {
            uint32_t w = (uint32_t)_mm_cvtsi128_si32(nibbles(p));
            memcpy(codes + i / 2, &w, 4);
        }
        if (res) qv_put_res(res + i, v0, d0);
    }
    for (; i < len; i++) {
        float v = res ? src[i] + res[i] : src[i];
        int q = q_int_code(v, pre, inv, levels, stochastic, rng, base + i);
        if (bits == 8)
            codes[i] = (uint8_t)q;
        else if (i & 1)
            codes[i / 2] |= (uint8_t)((q & 0xf) << 4);
        else
            codes[i / 2] = (uint8_t)(q & 0xf);
        if (res) res[i] = q_res_f32(v - (float)q * scale);
    }
}

/* One block's codes (or the non-finite fill) from its scanned absmax. */
Q_INLINE void code_block(const float *s, float *r, size_t len, uint64_t i0, int bits,
                         int stochastic, q_rng *rng, __m256i am, uint8_t *out) {
    const float levels = bits == 8 ? 127.0f : 7.0f;
    uint32_t amax = (uint32_t)_mm256_cvtsi256_si32(am);
    /* q_absmax_scale in vector registers, off the scalar round trip */
    __m256 a = _mm256_castsi256_ps(am), lv = _mm256_set1_ps(levels);
    __m256 tiny = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(Q_TINY_BITS), am));
    __m256 pv = _mm256_blendv_ps(_mm256_set1_ps(1.0f), _mm256_set1_ps(Q_TINY_PRE), tiny);
    __m256 sv = _mm256_div_ps(a, lv), iv = _mm256_div_ps(lv, _mm256_mul_ps(a, pv));
    iv = _mm256_and_ps(iv, _mm256_cmp_ps(a, _mm256_setzero_ps(), _CMP_GT_OQ));
    if (amax < 0x7f800000u) {
        float scale = q_finite_step(_mm256_cvtss_f32(sv), levels);
        if (scale != _mm256_cvtss_f32(sv)) sv = _mm256_set1_ps(scale); /* near FLT_MAX */
        mpiucc_put_u32(out, q_bits(scale));
        quant_block(s, r, len, i0, bits, stochastic, rng, sv, pv, iv, out + 4);
    } else { /* non-finite block: NaN scale, zero codes, residual 0 */
        mpiucc_put_u32(out, Q_NAN_BITS);
        memset(out + 4, 0, bits == 8 ? len : (len + 1) / 2);
        if (r) memset(r, 0, len * sizeof(float));
    }
}

#define GROUP_ELEMENTS 512 /* short blocks are scanned ahead in groups of this many elements */
#define GROUP_MAX 16

/* Short blocks go in groups: all are scanned (from memory), then all coded (from cache), so
 * that the scale of each (two divisions) is ready before its coding starts. Measured: 25%
 * faster than block by block for 256-element blocks; longer groups or blocks do not gain. */
Q_INLINE void encode_all(const float *src, float *res, size_t n, size_t block, int bits,
                         int stochastic, q_rng *rng, uint8_t *out) {
    size_t g = block < GROUP_ELEMENTS ? GROUP_ELEMENTS / block : 1, i0 = 0;
    size_t bytes = bits == 8 ? block : block / 2;
    if (g > GROUP_MAX) g = GROUP_MAX;
    __m256i am[GROUP_MAX];
    for (; i0 + g * block <= n; i0 += g * block) {
        for (size_t k = 0; k < g; k++)
            am[k] = scan_block(src + i0 + k * block, res ? res + i0 + k * block : NULL, block);
        for (size_t k = 0; k < g; k++) {
            size_t j0 = i0 + k * block;
            code_block(src + j0, res ? res + j0 : NULL, block, j0, bits, stochastic, rng, am[k],
                       out);
            out += 4 + bytes;
        }
    }
    for (; i0 < n; i0 += block) {
        size_t len = n - i0 < block ? n - i0 : block;
        const float *s = src + i0;
        float *r = res ? res + i0 : NULL;
        code_block(s, r, len, i0, bits, stochastic, rng, scan_block(s, r, len), out);
        out += 4 + (bits == 8 ? len : (len + 1) / 2);
    }
}

#define ENCODE_CASES(bits, st)                                   \
    do {                                                         \
        if (res)                                                 \
            encode_all(src, res, n, block, bits, st, &rng, out); \
        else                                                     \
            encode_all(src, NULL, n, block, bits, st, &rng, out); \
    } while (0)

void q_int_encode_avx2(const float *src, float *res, size_t n, size_t block, int bits,
                       int stochastic, uint64_t seed, uint8_t *out) {
    q_rng rng = q_rng_init(seed);
    if (bits == 8 && !stochastic)
        ENCODE_CASES(8, 0);
    else if (bits == 8)
        ENCODE_CASES(8, 1);
    else if (!stochastic)
        ENCODE_CASES(4, 0);
    else
        ENCODE_CASES(4, 1);
}

static inline void put_out(float *dst, __m256 y, int add) {
    if (add) y = _mm256_add_ps(_mm256_loadu_ps(dst), y);
    _mm256_storeu_ps(dst, y);
}

/* the low 8 int8 codes of b, times s */
static inline __m256 i8_to_ps(__m128i b, __m256 s) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), s);
}

void q_int_decode_block_avx2(const uint8_t *in, float *dst, size_t len, int bits, int add) {
    float scale = q_float(mpiucc_get_u32(in));
    const uint8_t *codes = in + 4;
    const __m256 s = _mm256_set1_ps(scale);
    size_t i = 0, len8 = len & ~(size_t)7;
    if (bits == 8) {
        for (; i + 32 <= len8; i += 32) {
            __m256i b = QV_LD256(codes + i);
            __m128i lo = _mm256_castsi256_si128(b), hi = _mm256_extracti128_si256(b, 1);
            put_out(dst + i, i8_to_ps(lo, s), add);
            put_out(dst + i + 8, i8_to_ps(_mm_srli_si128(lo, 8), s), add);
            put_out(dst + i + 16, i8_to_ps(hi, s), add);
            put_out(dst + i + 24, i8_to_ps(_mm_srli_si128(hi, 8), s), add);
        }
        for (; i < len8; i += 8) {
            __m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(codes + i));
            put_out(dst + i, i8_to_ps(b, s), add);
        }
    } else {
        const __m256i shifts = _mm256_setr_epi32(28, 24, 20, 16, 12, 8, 4, 0);
        for (; i < len8; i += 8) {
            uint32_t w;
            memcpy(&w, codes + i / 2, 4);
            __m256i q = _mm256_srai_epi32(_mm256_sllv_epi32(_mm256_set1_epi32((int)w), shifts), 28);
            put_out(dst + i, _mm256_mul_ps(_mm256_cvtepi32_ps(q), s), add);
        }
    }
    for (; i < len; i++) {
        int q = bits == 8 ? (int8_t)codes[i] : (((codes[i / 2] >> (4 * (i & 1))) & 0xf) ^ 8) - 8;
        float y = (float)q * scale;
        dst[i] = add ? dst[i] + y : y;
    }
}
