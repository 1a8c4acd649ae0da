/* q_kernels_avx2.c: the AVX2 quantizer table (f32 data): whole payloads over the block
 * kernels of the other x86/ files. Compiled with -mavx2 -mf16c -mbmi2. */
#include "../q_common.h"

static void half_encode(mpiucc_dtype t, int fp16, const void *src, void *res, size_t n,
                        uint8_t *out, uint32_t *seen) {
    (void)t;
    if (fp16)
        q_fp16_encode_avx2((const float *)src, (float *)res, n, out, seen);
    else
        q_bf16_encode_avx2((const float *)src, (float *)res, n, out, seen);
}

static void half_decode(mpiucc_dtype t, int fp16, const uint8_t *in, void *dst, size_t n,
                        int add) {
    (void)t;
    if (fp16)
        q_fp16_decode_avx2(in, (float *)dst, n, add);
    else
        q_bf16_decode_avx2(in, (float *)dst, n, add);
}

static void int_encode(mpiucc_dtype t, const void *src, void *res, size_t n, size_t b, int bits,
                       int stochastic, uint64_t seed, uint8_t *out) {
    (void)t;
    q_int_encode_avx2((const float *)src, (float *)res, n, b, bits, stochastic, seed, out);
}

static void int_decode(mpiucc_dtype t, const uint8_t *in, void *dst, size_t n, size_t b,
                       int bits, int add) {
    (void)t;
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b;
        q_int_decode_block_avx2(in, (float *)dst + i0, len, bits, add);
        in += 4 + (bits == 8 ? len : (len + 1) / 2);
    }
}

static void sign_encode(mpiucc_dtype t, const void *src, void *res, size_t n, size_t b,
                        uint8_t *out) {
    (void)t;
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b;
        q_sign_encode_block_avx2((const float *)src + i0, res ? (float *)res + i0 : NULL, len,
                                 out);
        out += 4 + (len + 7) / 8;
    }
}

static void sign_decode(mpiucc_dtype t, const uint8_t *in, void *dst, size_t n, size_t b,
                        int add) {
    (void)t;
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b;
        q_sign_decode_block_avx2(in, (float *)dst + i0, len, add);
        in += 4 + (len + 7) / 8;
    }
}

static void qsgd_encode(mpiucc_dtype t, const void *src, void *res, size_t n, size_t b,
                        uint32_t levels, int w, int stochastic, uint64_t seed, uint8_t *out,
                        size_t size) {
    (void)t;
    q_rng rng = q_rng_init(seed);
    uint8_t *o = out;
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b;
        q_qsgd_encode_block_avx2((const float *)src + i0, res ? (float *)res + i0 : NULL, len,
                                 i0, levels, w, stochastic, &rng, o, size - (size_t)(o - out));
        o += 4 + (len * (size_t)w + 7) / 8;
    }
}

static void qsgd_decode(mpiucc_dtype t, const uint8_t *in, void *dst, size_t n, size_t b,
                        uint32_t levels, int w, int add, size_t size) {
    (void)t;
    const uint8_t *p = in;
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b;
        q_qsgd_decode_block_avx2(p, (float *)dst + i0, len, levels, w, add,
                                 size - (size_t)(p - in));
        p += 4 + (len * (size_t)w + 7) / 8;
    }
}

const q_kernels q_kernels_avx2 = {half_encode, half_decode, int_encode,  int_decode,
                                  sign_encode, sign_decode, qsgd_encode, qsgd_decode};
