/* int8 and int4: blockwise absmax quantization. Each block is its f32 scale (absmax / 127,
 * resp. / 7) followed by its codes: int8 one signed byte each, int4 two signed nibbles per
 * byte (element 2j in the low nibble). Rounding to nearest even or stochastic. */
#include "q_common.h"

static size_t code_bytes(uint64_t len, int bits) {
    return (size_t)(bits == 8 ? len : (len + 1) / 2);
}

/* Exact payload size of n elements (blocks of b, b a multiple of 8). */
static uint64_t int_payload(uint64_t n, uint64_t b, int bits) {
    return 4 * q_nblocks(n, b) + (bits == 8 ? n : (n + 1) / 2);
}

static int bits_of(uint32_t codec) { return codec == MPIUCC_CODEC_INT8 ? 8 : 4; }

static size_t int_payload_bound(const mpiucc_params *p, size_t n) {
    if ((uint64_t)n > Q_COUNT_MAX) return 0;
    uint64_t s = int_payload(n, q_block_of(p), bits_of(p->codec));
    return q_bound(s);
}

static mpiucc_status int_check_params(const mpiucc_params *p) {
    if (!q_block_ok(q_block_of(p)) || p->levels || p->rounding > MPIUCC_ROUND_STOCHASTIC)
        return MPIUCC_ERR_ARG;
    return MPIUCC_OK;
}

Q_INLINE void int_encode_block(mpiucc_dtype t, const void *src, void *res, size_t i0, size_t len,
                               int bits, int stochastic, q_rng *rng, uint8_t *out) {
    uint32_t amax = 0;
    for (size_t j = 0; j < len; j++) {
        uint32_t a = q_bits(q_load_v(t, src, res, i0 + j)) & 0x7fffffffu;
        if (a > amax) amax = a;
    }
    float levels = bits == 8 ? 127.0f : 7.0f, scale, inv, pre;
    q_absmax_scale(amax, levels, &scale, &inv, &pre);
    mpiucc_put_u32(out, q_bits(scale));
    uint8_t *codes = out + 4;
    if (amax >= 0x7f800000u) { /* non-finite block: NaN scale, zero codes, residual 0 */
        memset(codes, 0, code_bytes(len, bits));
        if (res) {
            size_t es = mpiucc_dtype_size(t);
            memset((uint8_t *)res + i0 * es, 0, len * es);
        }
        return;
    }
    for (size_t j = 0; j < len; j++) {
        float v = q_load_v(t, src, res, i0 + j);
        int q = q_int_code(v, pre, inv, levels, stochastic, rng, i0 + j);
        if (bits == 8)
            codes[j] = (uint8_t)q;
        else if (j & 1)
            codes[j / 2] |= (uint8_t)((q & 0xf) << 4);
        else
            codes[j / 2] = (uint8_t)(q & 0xf);
        if (res) q_store_res(t, src, res, i0 + j, v, (float)q * scale);
    }
}

Q_INLINE void int_decode_block(mpiucc_dtype t, const uint8_t *in, void *dst, size_t i0,
                               size_t len, int bits, int add) {
    float scale = q_float(mpiucc_get_u32(in));
    const uint8_t *codes = in + 4;
    for (size_t j = 0; j < len; j++) {
        int q;
        if (bits == 8)
            q = (int8_t)codes[j];
        else
            q = (((codes[j / 2] >> (4 * (j & 1))) & 0xf) ^ 8) - 8;
        q_store_out(t, dst, i0 + j, (float)q * scale, add);
    }
}

void q_int_encode_generic(mpiucc_dtype t, const void *src, void *res, size_t n, size_t b,
                          int bits, int stochastic, uint64_t seed, uint8_t *out) {
    q_rng rng = q_rng_init(seed);
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b;
        Q_BY_DTYPE(t, int_encode_block, src, res, i0, len, bits, stochastic, &rng, out);
        out += 4 + code_bytes(len, bits);
    }
}

void q_int_decode_generic(mpiucc_dtype t, const uint8_t *in, void *dst, size_t n, size_t b,
                          int bits, int add) {
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b;
        Q_BY_DTYPE(t, int_decode_block, in, dst, i0, len, bits, add);
        in += 4 + code_bytes(len, bits);
    }
}

static mpiucc_status int_encode(const mpiucc_params *p, const void *src, void *res, size_t n,
                                uint8_t *out, size_t capacity, size_t *size, mpiucc_header *h) {
    mpiucc_dtype t = (mpiucc_dtype)p->dtype;
    size_t b = q_block_of(p);
    int bits = bits_of(p->codec), stochastic = p->rounding == MPIUCC_ROUND_STOCHASTIC;
    uint64_t total = int_payload(n, b, bits);
    if (capacity < total) return MPIUCC_ERR_CAPACITY;
    q_kernels_for(t)->int_encode(t, src, res, n, b, bits, stochastic, p->seed, out);
    *size = (size_t)total;
    if (q_any_nan_scale(out, n, b, 4 + code_bytes(b, bits))) h->flags |= MPIUCC_FLAG_NONFINITE;
    h->bound = INFINITY;
    h->block = (uint32_t)b;
    h->aux = p->rounding;
    return MPIUCC_OK;
}

static mpiucc_status int_check_header(const mpiucc_header *h) {
    if (h->bound != INFINITY || h->param != 0.0 || !q_block_ok(h->block) ||
        h->aux > MPIUCC_ROUND_STOCHASTIC ||
        h->payload_size != int_payload(h->count, h->block, bits_of(h->codec)))
        return MPIUCC_ERR_CORRUPT;
    return MPIUCC_OK;
}

static mpiucc_status int_decode(const mpiucc_header *h, const uint8_t *payload, void *dst,
                                int add) {
    mpiucc_dtype t = (mpiucc_dtype)h->dtype;
    size_t n = (size_t)h->count, b = h->block;
    int bits = bits_of(h->codec);
    if (bits == 4 && (n & 1) && (payload[h->payload_size - 1] >> 4))
        return MPIUCC_ERR_CORRUPT; /* the padding nibble must be zero */
    q_kernels_for(t)->int_decode(t, payload, dst, n, b, bits, add);
    return MPIUCC_OK;
}

const mpiucc_codec_impl mpiucc_int8_impl = {int_payload_bound, int_check_params, int_encode,
                                            int_check_header, int_decode, NULL, NULL};
const mpiucc_codec_impl mpiucc_int4_impl = {int_payload_bound, int_check_params, int_encode,
                                            int_check_header, int_decode, NULL, NULL};
