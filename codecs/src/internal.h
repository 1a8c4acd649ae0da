/* Private interface between the frame layer and the codec implementations. */
#ifndef MPIUCC_INTERNAL_H
#define MPIUCC_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "mpiucc.h"

#if defined(__x86_64__) || defined(_M_X64)
#define MPIUCC_X86 1
#else
#define MPIUCC_X86 0
#endif

/* One codec. The frame layer has validated params (common fields) or the header
 * (common fields and checksums) before any of these is called. */
typedef struct {
    /* Largest payload for n elements. */
    size_t (*payload_bound)(const mpiucc_params *p, size_t n);
    /* Codec-specific parameter checks (dtype, block size, levels, ...). */
    mpiucc_status (*check_params)(const mpiucc_params *p);
    /* Write the payload of n elements of src to out; when residual is not NULL, encode
     * src + residual and store the new residual. Fill h->bound, param, block, aux. */
    mpiucc_status (*encode)(const mpiucc_params *p, const void *src, void *residual, size_t n,
                            uint8_t *out, size_t capacity, size_t *size, mpiucc_header *h);
    /* Codec-specific header checks (dtype, block, aux, payload_size against count). */
    mpiucc_status (*check_header)(const mpiucc_header *h);
    /* Decode h->count elements from the payload into dst (dst += decoded when add).
     * Must never read past payload + h->payload_size nor write past dst + count. */
    mpiucc_status (*decode)(const mpiucc_header *h, const uint8_t *payload, void *dst, int add);
    /* Optional (NULL: none): the scratch that makes decoding faster, and decode with it
     * (scratch may be smaller than asked, or NULL: then as decode). */
    size_t (*scratch_size)(const mpiucc_header *h);
    mpiucc_status (*decode_scratch)(const mpiucc_header *h, const uint8_t *payload, void *dst,
                                    int add, uint8_t *scratch, size_t scratch_size);
} mpiucc_codec_impl;

/* Implementations; NULL entries of the table are codecs not built. */
extern const mpiucc_codec_impl *const mpiucc_codec_table[MPIUCC_CODEC_COUNT_];
extern const mpiucc_codec_impl mpiucc_raw_impl;
extern const mpiucc_codec_impl mpiucc_ebq_impl;
extern const mpiucc_codec_impl mpiucc_fp16_impl;
extern const mpiucc_codec_impl mpiucc_bf16_impl;
extern const mpiucc_codec_impl mpiucc_int8_impl;
extern const mpiucc_codec_impl mpiucc_int4_impl;
extern const mpiucc_codec_impl mpiucc_sign_impl;
extern const mpiucc_codec_impl mpiucc_qsgd_impl;
extern const mpiucc_codec_impl mpiucc_topk_impl;

/* The ebq decoder on up to threads threads (0: the default). */
mpiucc_status ebq_decode_threads(const mpiucc_header *h, const uint8_t *payload, void *dst,
                                 int add, uint8_t *scratch, size_t scratch_size,
                                 unsigned threads);

/* Write the 64-byte header h (with its checksum) at dst; frames made outside
 * mpiucc_compress (ebq_add) use it too. */
void mpiucc_write_header(uint8_t *dst, const mpiucc_header *h);

/* The SIMD level in force (cached after the first call). */
mpiucc_simd mpiucc_simd_now(void);

/* ---- little-endian loads and stores ---- */
static inline void mpiucc_put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline uint32_t mpiucc_get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void mpiucc_put_u64(uint8_t *p, uint64_t v) {
    mpiucc_put_u32(p, (uint32_t)v); mpiucc_put_u32(p + 4, (uint32_t)(v >> 32));
}
static inline uint64_t mpiucc_get_u64(const uint8_t *p) {
    return (uint64_t)mpiucc_get_u32(p) | (uint64_t)mpiucc_get_u32(p + 4) << 32;
}
static inline void mpiucc_put_f64(uint8_t *p, double v) {
    uint64_t u; memcpy(&u, &v, 8); mpiucc_put_u64(p, u);
}
static inline double mpiucc_get_f64(const uint8_t *p) {
    uint64_t u = mpiucc_get_u64(p); double v; memcpy(&v, &u, 8); return v;
}

/* ---- half-precision conversions (round to nearest even; NaN stays NaN) ---- */
static inline float mpiucc_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f;
}
static inline uint16_t mpiucc_f32_to_bf16(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
float mpiucc_f16_to_f32(uint16_t h);
uint16_t mpiucc_f32_to_f16(float f); /* overflow gives +-Inf: callers saturate first */

/* Element i of an array of a float dtype, widened to double, and the reverse (narrowing
 * rounds to nearest even). For the generic paths; SIMD paths handle their dtypes inline. */
static inline double mpiucc_load(mpiucc_dtype t, const void *p, size_t i) {
    switch (t) {
    case MPIUCC_DTYPE_F32: return ((const float *)p)[i];
    case MPIUCC_DTYPE_F64: return ((const double *)p)[i];
    case MPIUCC_DTYPE_F16: return mpiucc_f16_to_f32(((const uint16_t *)p)[i]);
    default: return mpiucc_bf16_to_f32(((const uint16_t *)p)[i]);
    }
}
static inline void mpiucc_store(mpiucc_dtype t, void *p, size_t i, double v) {
    switch (t) {
    case MPIUCC_DTYPE_F32: ((float *)p)[i] = (float)v; break;
    case MPIUCC_DTYPE_F64: ((double *)p)[i] = v; break;
    case MPIUCC_DTYPE_F16: ((uint16_t *)p)[i] = mpiucc_f32_to_f16((float)v); break;
    default: ((uint16_t *)p)[i] = mpiucc_f32_to_bf16((float)v); break;
    }
}

/* ---- counter-based random numbers for stochastic rounding ----
 * Element i of an array gets the same number for the same seed, whatever the SIMD path or the
 * chunking: r = hash32((uint32_t)i + key), key = mpiucc_random_key(seed, i >> 32). */
static inline uint32_t mpiucc_hash32(uint32_t x) { /* a bijective integer mixer */
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    return x;
}
static inline uint32_t mpiucc_random_key(uint64_t seed, uint64_t high) {
    return mpiucc_hash32((uint32_t)seed ^ mpiucc_hash32((uint32_t)(seed >> 32) ^ (uint32_t)high));
}
static inline uint32_t mpiucc_random_u32(uint64_t seed, uint64_t i) {
    return mpiucc_hash32((uint32_t)i + mpiucc_random_key(seed, i >> 32));
}
/* Uniform in [0, 1) with 24 bits, exact in float. */
static inline float mpiucc_random_unit(uint64_t seed, uint64_t i) {
    return (float)(mpiucc_random_u32(seed, i) >> 8) * (1.0f / 16777216.0f);
}

#endif /* MPIUCC_INTERNAL_H */
