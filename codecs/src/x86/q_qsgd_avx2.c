/* AVX2 kernels of qsgd for f32 data; same bytes as q_qsgd.c. Eight codes of w bits fill
 * exactly w bytes, so groups of 8 are packed with shifts and masks (no pext: slow on some
 * CPUs) and the tail continues the generic bit stream from a byte boundary. */
#include "q_avx2.h"

/* 8 byte-sized codes (each below 2^w) -> 8w bits, code j at bit j*w */
static inline uint64_t pack_w(uint64_t b, int w) {
    b = (b & 0x00ff00ff00ff00ffull) | (b & 0xff00ff00ff00ff00ull) >> (8 - w);
    b = (b & 0x0000ffff0000ffffull) | (b & 0xffff0000ffff0000ull) >> (16 - 2 * w);
    return (b & 0xffffffffull) | (b >> 32) << (4 * w);
}
/* the reverse: 8w bits (nothing above) -> 8 bytes */
static inline uint64_t unpack_w(uint64_t a, int w) {
    uint64_t m4 = (1ull << (4 * w)) - 1;
    uint64_t m2 = ((1ull << (2 * w)) - 1) * 0x0000000100000001ull;
    uint64_t m1 = ((1ull << w) - 1) * 0x0001000100010001ull;
    a = (a & m4) | (a >> (4 * w) & m4) << 32;
    a = (a & m2) | (a >> (2 * w) & m2) << 16;
    return (a & m1) | (a >> w & m1) << 8;
}

void q_qsgd_encode_block_avx2(const float *src, float *res, size_t len, uint64_t base,
                              uint32_t levels, int w, int stochastic, q_rng *rng, uint8_t *out,
                              size_t room) {
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    size_t len8 = len & ~(size_t)7, i = 0;
    for (; i + 16 <= len8; i += 16) {
        __m256 v0 = qv_load(src, res, i), v1 = qv_load(src, res, i + 8);
        __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v0));
        __m256d d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v0, 1));
        __m256d d2 = _mm256_cvtps_pd(_mm256_castps256_ps128(v1));
        __m256d d3 = _mm256_cvtps_pd(_mm256_extractf128_ps(v1, 1));
        a0 = _mm256_add_pd(a0, _mm256_mul_pd(d0, d0));
        a1 = _mm256_add_pd(a1, _mm256_mul_pd(d1, d1));
        a2 = _mm256_add_pd(a2, _mm256_mul_pd(d2, d2));
        a3 = _mm256_add_pd(a3, _mm256_mul_pd(d3, d3));
    }
    if (i < len8) { /* 8 more, at a position that is 0 mod 16 */
        __m256 v0 = qv_load(src, res, i);
        __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(v0));
        __m256d d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(v0, 1));
        a0 = _mm256_add_pd(a0, _mm256_mul_pd(d0, d0));
        a1 = _mm256_add_pd(a1, _mm256_mul_pd(d1, d1));
        i += 8;
    }
    double lanes[Q_LANES];
    _mm256_storeu_pd(lanes, a0);
    _mm256_storeu_pd(lanes + 4, a1);
    _mm256_storeu_pd(lanes + 8, a2);
    _mm256_storeu_pd(lanes + 12, a3);
    for (; i < len; i++) {
        double v = res ? src[i] + res[i] : src[i];
        lanes[i % Q_LANES] += v * v;
    }
    q_qsgd_block qb = q_qsgd_scales(q_lanes_sum(lanes), levels);
    mpiucc_put_u32(out, q_bits(qb.norm));

    uint8_t *o = out + 4, *end = out + room;
    const __m256 inv = _mm256_set1_ps(qb.inv), pre = _mm256_set1_ps(qb.pre);
    const __m256 step = _mm256_set1_ps(qb.step);
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i sv = _mm256_set1_epi32((int)levels);
    for (i = 0; i < len8; i += 8) {
        __m256 v = qv_load(src, res, i);
        __m256 y = qb.finite ? _mm256_mul_ps(_mm256_mul_ps(_mm256_and_ps(v, absm), pre), inv)
                             : _mm256_setzero_ps();
        if (stochastic)
            y = _mm256_floor_ps(_mm256_add_ps(y, qv_rand8(rng, base + i)));
        else
            y = _mm256_round_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256i l = _mm256_min_epi32(_mm256_cvttps_epi32(y), sv);
        __m256i code = _mm256_add_epi32(sv, _mm256_sign_epi32(l, _mm256_castps_si256(v)));
        __m128i c16 = _mm_packs_epi32(_mm256_castsi256_si128(code),
                                      _mm256_extracti128_si256(code, 1));
        uint64_t packed = pack_w((uint64_t)_mm_cvtsi128_si64(_mm_packus_epi16(c16, c16)), w);
        if (end - o >= 8)
            memcpy(o, &packed, 8); /* the bytes past w are rewritten by what follows */
        else
            for (int k = 0; k < w; k++) o[k] = (uint8_t)(packed >> 8 * k);
        o += w;
        if (res) {
            __m256 dec = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(code, sv)), step);
            qv_put_res(res + i, v, dec);
        }
    }
    uint64_t acc = 0;
    int nacc = 0;
    for (; i < len; i++) {
        float v = res ? src[i] + res[i] : src[i];
        int code = q_qsgd_code(&qb, v, levels, stochastic, rng, base + i);
        acc |= (uint64_t)code << nacc;
        for (nacc += w; nacc >= 8; nacc -= 8) {
            *o++ = (uint8_t)acc;
            acc >>= 8;
        }
        if (res) res[i] = q_res_f32(v - (float)(code - (int)levels) * qb.step);
    }
    if (nacc) *o = (uint8_t)acc;
}

void q_qsgd_decode_block_avx2(const uint8_t *in, float *dst, size_t len, uint32_t levels, int w,
                              int add, size_t room) {
    float stepf = q_float(mpiucc_get_u32(in)) / (float)levels;
    const __m256 step = _mm256_set1_ps(stepf);
    const __m256i sv = _mm256_set1_epi32((int)levels);
    const uint8_t *c = in + 4, *end = in + room;
    const uint64_t keep = w == 8 ? ~0ull : (1ull << 8 * w) - 1;
    size_t len8 = len & ~(size_t)7, i = 0;
    for (; i < len8; i += 8) {
        uint64_t a = 0;
        if (end - c >= 8)
            memcpy(&a, c, 8);
        else
            for (int k = 0; k < w; k++) a |= (uint64_t)c[k] << 8 * k;
        c += w;
        __m128i b = _mm_cvtsi64_si128((long long)unpack_w(a & keep, w));
        __m256i code = _mm256_sub_epi32(_mm256_cvtepu8_epi32(b), sv);
        __m256 y = _mm256_mul_ps(_mm256_cvtepi32_ps(code), step);
        if (add) y = _mm256_add_ps(_mm256_loadu_ps(dst + i), y);
        _mm256_storeu_ps(dst + i, y);
    }
    uint64_t acc = 0, mask = (1u << w) - 1;
    int nacc = 0;
    for (; i < len; i++) {
        if (nacc < w) {
            acc |= (uint64_t)*c++ << nacc;
            nacc += 8;
        }
        int code = (int)(acc & mask);
        acc >>= w;
        nacc -= w;
        float y = (float)(code - (int)levels) * stepf;
        dst[i] = add ? dst[i] + y : y;
    }
}
