/* AVX2/F16C kernels of fp16 and bf16 for f32 data; same bits as q_half.c. */
#include "q_avx2.h"

#define ABS_MASK 0x7fffffff
#define SIGN_MASK ((int)0x80000000u)

/* satacc: lanes that saturated; finacc: lanes that were all finite so far. */
static inline __m128i fp16_of(__m256 v, __m256 *satacc, __m256 *finacc) {
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(ABS_MASK));
    const __m256 top = _mm256_set1_ps(Q_F16_MAX);
    __m256 a = _mm256_and_ps(v, absm);
    __m256 fin = _mm256_cmp_ps(a, _mm256_set1_ps(INFINITY), _CMP_LT_OQ);
    *satacc = _mm256_or_ps(*satacc, _mm256_and_ps(_mm256_cmp_ps(a, top, _CMP_GT_OQ), fin));
    *finacc = _mm256_and_ps(*finacc, fin);
    __m256 c = _mm256_or_ps(_mm256_min_ps(a, top), _mm256_andnot_ps(absm, v));
    return _mm256_cvtps_ph(_mm256_blendv_ps(v, c, fin),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

void q_fp16_encode_avx2(const float *src, float *res, size_t n, uint8_t *out, uint32_t *seen) {
    __m256 satacc = _mm256_setzero_ps();
    __m256 finacc = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    size_t i = 0;
    if (res) {
        for (; i + 8 <= n; i += 8) {
            __m256 v = _mm256_add_ps(_mm256_loadu_ps(src + i), _mm256_loadu_ps(res + i));
            __m128i h = fp16_of(v, &satacc, &finacc);
            QV_ST128(out + 2 * i, h);
            _mm256_storeu_ps(res + i, qv_res(v, _mm256_cvtph_ps(h)));
        }
    } else {
        for (; i + 16 <= n; i += 16) {
            __m128i h0 = fp16_of(_mm256_loadu_ps(src + i), &satacc, &finacc);
            __m128i h1 = fp16_of(_mm256_loadu_ps(src + i + 8), &satacc, &finacc);
            QV_ST256(out + 2 * i, _mm256_set_m128i(h1, h0));
        }
        for (; i + 8 <= n; i += 8)
            QV_ST128(out + 2 * i, fp16_of(_mm256_loadu_ps(src + i), &satacc, &finacc));
    }
    if (_mm256_movemask_ps(satacc)) *seen |= Q_FLAG_SATURATED;
    if (_mm256_movemask_ps(finacc) != 0xff) *seen |= Q_SEEN_NONFINITE;
    for (; i < n; i++) {
        float v = res ? src[i] + res[i] : src[i], a = fabsf(v);
        if (a > Q_F16_MAX && a < INFINITY) *seen |= Q_FLAG_SATURATED;
        if (!(a < INFINITY)) *seen |= Q_SEEN_NONFINITE;
        uint16_t h = q_f32_to_f16_sat(v);
        out[2 * i] = (uint8_t)h;
        out[2 * i + 1] = (uint8_t)(h >> 8);
        if (res) res[i] = q_res_f32(v - q_f16_to_f32(h));
    }
}

void q_fp16_decode_avx2(const uint8_t *in, float *dst, size_t n, int add) {
    size_t i = 0;
    if (add) {
        for (; i + 8 <= n; i += 8) {
            __m256 y = _mm256_cvtph_ps(QV_LD128(in + 2 * i));
            _mm256_storeu_ps(dst + i, _mm256_add_ps(_mm256_loadu_ps(dst + i), y));
        }
    } else {
        for (; i + 16 <= n; i += 16) {
            __m256i h = QV_LD256(in + 2 * i);
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm256_castsi256_si128(h)));
            _mm256_storeu_ps(dst + i + 8, _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)));
        }
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(QV_LD128(in + 2 * i)));
    }
    for (; i < n; i++) {
        float y = q_f16_to_f32((uint16_t)(in[2 * i] | in[2 * i + 1] << 8));
        dst[i] = add ? dst[i] + y : y;
    }
}

/* 8 floats -> 8 bfloat16 in the low 16 bits of each 32-bit lane; satacc: lanes that
 * saturated; finacc: lanes that were all finite so far. */
static inline __m256i bf16_of(__m256 v, __m256i *satacc, __m256i *finacc) {
    const __m256i inf = _mm256_set1_epi32(0x7f800000);
    const __m256i top = _mm256_set1_epi32((int)Q_BF16_MAX_BITS);
    __m256i u = _mm256_castps_si256(v);
    __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(ABS_MASK));
    __m256i s = _mm256_and_si256(u, _mm256_set1_epi32(SIGN_MASK));
    __m256i isnan = _mm256_cmpgt_epi32(a, inf);
    __m256i big = _mm256_and_si256(_mm256_cmpgt_epi32(a, top), _mm256_cmpgt_epi32(inf, a));
    *satacc = _mm256_or_si256(*satacc, big);
    *finacc = _mm256_and_si256(*finacc, _mm256_cmpgt_epi32(inf, a));
    a = _mm256_blendv_epi8(a, top, big);
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(a, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(a, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff)));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(a, _mm256_set1_epi32(0x00400000)), isnan);
    return _mm256_srli_epi32(_mm256_or_si256(r, s), 16);
}

static inline __m128i pack16(__m256i w) {
    return _mm_packus_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
}

void q_bf16_encode_avx2(const float *src, float *res, size_t n, uint8_t *out, uint32_t *seen) {
    __m256i satacc = _mm256_setzero_si256(), finacc = _mm256_set1_epi32(-1);
    size_t i = 0;
    if (res) {
        for (; i + 8 <= n; i += 8) {
            __m256 v = _mm256_add_ps(_mm256_loadu_ps(src + i), _mm256_loadu_ps(res + i));
            __m256i w = bf16_of(v, &satacc, &finacc);
            QV_ST128(out + 2 * i, pack16(w));
            __m256 dec = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
            _mm256_storeu_ps(res + i, qv_res(v, dec));
        }
    } else {
        for (; i + 16 <= n; i += 16) {
            __m256i w0 = bf16_of(_mm256_loadu_ps(src + i), &satacc, &finacc);
            __m256i w1 = bf16_of(_mm256_loadu_ps(src + i + 8), &satacc, &finacc);
            __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(w0, w1), 0xd8);
            QV_ST256(out + 2 * i, p);
        }
        for (; i + 8 <= n; i += 8)
            QV_ST128(out + 2 * i,
                     pack16(bf16_of(_mm256_loadu_ps(src + i), &satacc, &finacc)));
    }
    if (!_mm256_testz_si256(satacc, satacc)) *seen |= Q_FLAG_SATURATED;
    if (_mm256_movemask_epi8(finacc) != -1) *seen |= Q_SEEN_NONFINITE;
    for (; i < n; i++) {
        float v = res ? src[i] + res[i] : src[i];
        uint32_t a = q_bits(v) & 0x7fffffffu;
        if (a > Q_BF16_MAX_BITS && a < 0x7f800000u) *seen |= Q_FLAG_SATURATED;
        if (a >= 0x7f800000u) *seen |= Q_SEEN_NONFINITE;
        uint16_t h = q_f32_to_bf16_sat(v);
        out[2 * i] = (uint8_t)h;
        out[2 * i + 1] = (uint8_t)(h >> 8);
        if (res) res[i] = q_res_f32(v - mpiucc_bf16_to_f32(h));
    }
}

static inline __m256 bf16_load8(const uint8_t *p) {
    __m256i w = _mm256_cvtepu16_epi32(QV_LD128(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

void q_bf16_decode_avx2(const uint8_t *in, float *dst, size_t n, int add) {
    size_t i = 0;
    if (add) {
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(dst + i,
                             _mm256_add_ps(_mm256_loadu_ps(dst + i), bf16_load8(in + 2 * i)));
    } else {
        for (; i + 16 <= n; i += 16) {
            __m256i h = QV_LD256(in + 2 * i);
            __m256i lo = _mm256_unpacklo_epi16(_mm256_setzero_si256(), h);
            __m256i hi = _mm256_unpackhi_epi16(_mm256_setzero_si256(), h);
            /* unpack works per 128-bit lane: lo = elements 0-3, 8-11; hi = 4-7, 12-15 */
            __m256i a = _mm256_permute2x128_si256(lo, hi, 0x20);
            __m256i b = _mm256_permute2x128_si256(lo, hi, 0x31);
            _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(a));
            _mm256_storeu_ps(dst + i + 8, _mm256_castsi256_ps(b));
        }
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, bf16_load8(in + 2 * i));
    }
    for (; i < n; i++) {
        float y = mpiucc_bf16_to_f32((uint16_t)(in[2 * i] | in[2 * i + 1] << 8));
        dst[i] = add ? dst[i] + y : y;
    }
}
