/* Helpers of the quantizing-codec tests (test_quant.c, test_q_*.c). */
#ifndef Q_TESTLIB_H
#define Q_TESTLIB_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mpiucc.h"

static int q_failures;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            if (q_failures++ < 30) fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)
#define CHECKF(cond, ...)                                                            \
    do {                                                                             \
        if (!(cond)) {                                                               \
            if (q_failures++ < 30) {                                                 \
                fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
                fprintf(stderr, __VA_ARGS__);                                        \
                fputc('\n', stderr);                                                 \
            }                                                                        \
        }                                                                            \
    } while (0)

static const uint32_t q_codecs[] = {MPIUCC_CODEC_FP16, MPIUCC_CODEC_BF16, MPIUCC_CODEC_INT8,
                                    MPIUCC_CODEC_INT4, MPIUCC_CODEC_SIGN, MPIUCC_CODEC_QSGD,
                                    MPIUCC_CODEC_TOPK};
#define Q_NCODECS (sizeof q_codecs / sizeof q_codecs[0])
static const uint32_t q_dtypes[] = {MPIUCC_DTYPE_F32, MPIUCC_DTYPE_F64, MPIUCC_DTYPE_F16,
                                    MPIUCC_DTYPE_BF16};

static inline const char *q_codec_name(uint32_t c) {
    static const char *names[] = {"raw", "ebq", "fp16", "bf16", "int8", "int4", "sign", "qsgd", "topk"};
    return c < 9 ? names[c] : "?";
}

/* xorshift64* */
static uint64_t q_rng_state = 0x9e3779b97f4a7c15ull;
static inline uint64_t q_rand(void) {
    q_rng_state ^= q_rng_state >> 12;
    q_rng_state ^= q_rng_state << 25;
    q_rng_state ^= q_rng_state >> 27;
    return q_rng_state * 2685821657736338717ull;
}
static inline double q_uniform(void) { return (double)(q_rand() >> 11) * (1.0 / 9007199254740992.0); }
static inline double q_normal(void) {
    double u = q_uniform(), v = q_uniform();
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

/* Gradient-like data: normal values whose scale varies from block to block. */
static inline void q_fill(float *x, size_t n) {
    double scale = 1.0;
    for (size_t i = 0; i < n; i++) {
        if (i % 97 == 0) scale = exp(q_normal() * 2.0) * 1e-2;
        x[i] = (float)(q_normal() * scale);
    }
}

/* x (f32) converted into an array of dtype t (rounded for narrower types). */
static inline void *q_to_dtype(uint32_t t, const float *x, size_t n) {
    size_t es = mpiucc_dtype_size((mpiucc_dtype)t);
    void *p = malloc(n * es + 1);
    for (size_t i = 0; i < n; i++) mpiucc_store((mpiucc_dtype)t, p, i, x[i]);
    return p;
}
static inline double q_get(uint32_t t, const void *p, size_t i) { return mpiucc_load((mpiucc_dtype)t, p, i); }

static inline mpiucc_params q_params(uint32_t codec, uint32_t dtype) {
    mpiucc_params p = MPIUCC_PARAMS_INIT;
    p.codec = codec;
    p.dtype = dtype;
    if (codec == MPIUCC_CODEC_QSGD) p.levels = 7;
    if (codec == MPIUCC_CODEC_TOPK) p.levels = 16;
    return p;
}

static inline uint32_t q_block(const mpiucc_params *p) {
    if (p->codec == MPIUCC_CODEC_FP16 || p->codec == MPIUCC_CODEC_BF16) return 0;
    return p->block_size ? p->block_size : 256;
}

static inline int q_qsgd_width(uint32_t s) {
    int w = 1;
    while ((1u << w) < 2 * s + 1) w++;
    return w;
}

/* The exact payload size formula of FORMAT-quant.md. */
static inline uint64_t q_payload_formula(const mpiucc_params *p, uint64_t n) {
    uint64_t b = q_block(p), nb = b ? (n + b - 1) / b : 0;
    switch (p->codec) {
    case MPIUCC_CODEC_FP16:
    case MPIUCC_CODEC_BF16: return 2 * n;
    case MPIUCC_CODEC_INT8: return 4 * nb + n;
    case MPIUCC_CODEC_INT4: return 4 * nb + (n + 1) / 2;
    case MPIUCC_CODEC_SIGN: return 4 * nb + (n + 7) / 8;
    case MPIUCC_CODEC_QSGD: return 4 * nb + (n * (uint64_t)q_qsgd_width(p->levels) + 7) / 8;
    case MPIUCC_CODEC_TOPK: {
        uint64_t k = p->levels, last = n % b;
        return 6 * ((n / b) * (k < b ? k : b) + (k < last ? k : last));
    }
    }
    return 0;
}

/* Offset in the payload of block j's f32 scale (full blocks before it). */
static inline size_t q_scale_offset(const mpiucc_params *p, size_t j) {
    size_t b = q_block(p);
    switch (p->codec) {
    case MPIUCC_CODEC_INT8: return j * (4 + b);
    case MPIUCC_CODEC_INT4: return j * (4 + b / 2);
    case MPIUCC_CODEC_SIGN: return j * (4 + b / 8);
    case MPIUCC_CODEC_QSGD: return j * (4 + b * (size_t)q_qsgd_width(p->levels) / 8);
    }
    return 0;
}
static inline float q_frame_scale(const mpiucc_params *p, const uint8_t *frame, size_t j) {
    uint32_t u = mpiucc_get_u32(frame + MPIUCC_HEADER_SIZE + q_scale_offset(p, j));
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Compress into a fresh buffer (residual: error feedback); NULL on failure (st says why). */
static inline uint8_t *q_compress(const mpiucc_params *p, const void *src, void *res, size_t n,
                           size_t *size, mpiucc_status *st) {
    size_t cap = mpiucc_compress_bound(p, n);
    uint8_t *buf = malloc(cap ? cap : 1);
    *st = cap ? (res ? mpiucc_compress_ef(p, src, res, n, buf, cap, size)
                     : mpiucc_compress(p, src, n, buf, cap, size))
              : MPIUCC_ERR_ARG;
    if (*st != MPIUCC_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Rewrite the header checksum after editing header bytes. */
static inline void q_reseal(uint8_t *frame) { mpiucc_put_u32(frame + 60, mpiucc_crc32c(0, frame, 60)); }

#endif
