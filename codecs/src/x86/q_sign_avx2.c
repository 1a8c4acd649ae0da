/* AVX2 kernels of sign for f32 data; same bytes as q_sign.c (the block sum keeps its 16
 * lanes: lane = position mod 16, each summed in element order, then q_lanes_sum). */
#include "q_avx2.h"

void q_sign_encode_block_avx2(const float *src, float *res, size_t len, uint8_t *out) {
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    size_t len8 = len & ~(size_t)7, i = 0;
    for (; i + 16 <= len8; i += 16) {
        __m256 x0 = _mm256_and_ps(qv_load(src, res, i), absm);
        __m256 x1 = _mm256_and_ps(qv_load(src, res, i + 8), absm);
        a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(x0)));
        a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(x0, 1)));
        a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm256_castps256_ps128(x1)));
        a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm256_extractf128_ps(x1, 1)));
    }
    if (i < len8) { /* 8 more, at a position that is 0 mod 16 */
        __m256 x0 = _mm256_and_ps(qv_load(src, res, i), absm);
        a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(x0)));
        a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(x0, 1)));
        i += 8;
    }
    double lanes[Q_LANES];
    _mm256_storeu_pd(lanes, a0);
    _mm256_storeu_pd(lanes + 4, a1);
    _mm256_storeu_pd(lanes + 8, a2);
    _mm256_storeu_pd(lanes + 12, a3);
    for (; i < len; i++) lanes[i % Q_LANES] += (double)fabsf(res ? src[i] + res[i] : src[i]);
    float scale = q_mean_scale(q_lanes_sum(lanes), len);
    mpiucc_put_u32(out, q_bits(scale));
    uint8_t *bits = out + 4;

    const __m256 sv = _mm256_set1_ps(scale);
    const __m256 sm = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    for (i = 0; i + 32 <= len8; i += 32) {
        __m256 v0 = qv_load(src, res, i), v1 = qv_load(src, res, i + 8);
        __m256 v2 = qv_load(src, res, i + 16), v3 = qv_load(src, res, i + 24);
        uint32_t w = (uint32_t)_mm256_movemask_ps(v0) | (uint32_t)_mm256_movemask_ps(v1) << 8;
        w |= (uint32_t)_mm256_movemask_ps(v2) << 16 | (uint32_t)_mm256_movemask_ps(v3) << 24;
        memcpy(bits + i / 8, &w, 4);
        if (res) {
            qv_put_res(res + i, v0, _mm256_or_ps(sv, _mm256_and_ps(v0, sm)));
            qv_put_res(res + i + 8, v1, _mm256_or_ps(sv, _mm256_and_ps(v1, sm)));
            qv_put_res(res + i + 16, v2, _mm256_or_ps(sv, _mm256_and_ps(v2, sm)));
            qv_put_res(res + i + 24, v3, _mm256_or_ps(sv, _mm256_and_ps(v3, sm)));
        }
    }
    for (; i < len8; i += 8) {
        __m256 v0 = qv_load(src, res, i);
        bits[i / 8] = (uint8_t)_mm256_movemask_ps(v0);
        if (res) qv_put_res(res + i, v0, _mm256_or_ps(sv, _mm256_and_ps(v0, sm)));
    }
    if (i < len) bits[i / 8] = 0;
    for (; i < len; i++) {
        float v = res ? src[i] + res[i] : src[i];
        uint32_t neg = q_bits(v) >> 31;
        bits[i / 8] |= (uint8_t)(neg << (i & 7));
        if (res) res[i] = q_res_f32(v - q_float(q_bits(scale) | neg << 31));
    }
}

void q_sign_decode_block_avx2(const uint8_t *in, float *dst, size_t len, int add) {
    uint32_t scale = mpiucc_get_u32(in);
    const uint8_t *bits = in + 4;
    const __m256i sv = _mm256_set1_epi32((int)scale), sm = _mm256_set1_epi32((int)0x80000000u);
    const __m256i sh0 = _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24);
    size_t len8 = len & ~(size_t)7, i = 0;
    for (; i < len8; i += 8) {
        __m256i b = _mm256_set1_epi32(bits[i / 8]);
        __m256i neg = _mm256_and_si256(_mm256_sllv_epi32(b, sh0), sm);
        __m256 y = _mm256_castsi256_ps(_mm256_or_si256(sv, neg));
        if (add) y = _mm256_add_ps(_mm256_loadu_ps(dst + i), y);
        _mm256_storeu_ps(dst + i, y);
    }
    for (; i < len; i++) {
        uint32_t neg = (bits[i / 8] >> (i & 7)) & 1u;
        float y = q_float(scale | neg << 31);
        dst[i] = add ? dst[i] + y : y;
    }
}
