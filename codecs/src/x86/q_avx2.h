/* Inline AVX2 helpers shared by the quantizer kernels (compiled with -mavx2 only). */
#ifndef MPIUCC_Q_AVX2_H
#define MPIUCC_Q_AVX2_H

#include <immintrin.h>

#include "../q_common.h"

/* unaligned 128/256-bit loads and stores at byte pointers */
#define QV_LD128(p) _mm_loadu_si128((const __m128i *)(const void *)(p))
#define QV_ST128(p, x) _mm_storeu_si128((__m128i *)(void *)(p), (x))
#define QV_LD256(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define QV_ST256(p, x) _mm256_storeu_si256((__m256i *)(void *)(p), (x))

/* |v| as integer bits: ordered like |v|, with NaN above Inf above every finite value */
static inline __m256i qv_absbits(__m256 v) {
    return _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fffffff));
}

/* v = src[i..i+7] (+ res[i..i+7]) */
static inline __m256 qv_load(const float *src, const float *res, size_t i) {
    __m256 v = _mm256_loadu_ps(src + i);
    return res ? _mm256_add_ps(v, _mm256_loadu_ps(res + i)) : v;
}

/* v - dec, +0 where that is not finite (q_res_f32) */
static inline __m256 qv_res(__m256 v, __m256 dec) {
    __m256 r = _mm256_sub_ps(v, dec);
    __m256 a = _mm256_and_ps(r, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
    return _mm256_and_ps(r, _mm256_cmp_ps(a, _mm256_set1_ps(INFINITY), _CMP_LT_OQ));
}
static inline void qv_put_res(float *res, __m256 v, __m256 dec) {
    _mm256_storeu_ps(res, qv_res(v, dec));
}

/* q_rng_unit of elements i .. i+7 (i a multiple of 8, so all share i >> 32). */
static inline __m256 qv_rand8(q_rng *rng, uint64_t i) {
    if ((i >> 32) != rng->hi) {
        rng->hi = i >> 32;
        rng->key = mpiucc_random_key(rng->seed, rng->hi);
    }
    __m256i x = _mm256_add_epi32(_mm256_set1_epi32((int)((uint32_t)i + rng->key)),
                                 _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
    x = _mm256_mullo_epi32(x, _mm256_set1_epi32(0x7feb352d));
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
    x = _mm256_mullo_epi32(x, _mm256_set1_epi32((int)0x846ca68bu));
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
    __m256 u = _mm256_cvtepi32_ps(_mm256_srli_epi32(x, 8));
    return _mm256_mul_ps(u, _mm256_set1_ps(1.0f / 16777216.0f));
}

#endif
