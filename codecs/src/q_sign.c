/* sign: one bit per element (1 = sign bit set, so -0 counts as negative) and per block the
 * f32 mean of |x|; element decodes to +-scale. A block holding NaN or Inf gets a NaN scale. */
#include "q_common.h"

static uint64_t sign_payload(uint64_t n, uint64_t b) { return 4 * q_nblocks(n, b) + (n + 7) / 8; }

static size_t sign_payload_bound(const mpiucc_params *p, size_t n) {
    if ((uint64_t)n > Q_COUNT_MAX) return 0;
    uint64_t s = sign_payload(n, q_block_of(p));
    return q_bound(s);
}

static mpiucc_status sign_check_params(const mpiucc_params *p) {
    if (!q_block_ok(q_block_of(p)) || p->levels || p->rounding != MPIUCC_ROUND_NEAREST)
        return MPIUCC_ERR_ARG;
    return MPIUCC_OK;
}

Q_INLINE void sign_encode_block(mpiucc_dtype t, const void *src, void *res, size_t i0,
                                size_t len, uint8_t *out) {
    double lanes[Q_LANES] = {0};
    for (size_t j = 0; j < len; j++)
        lanes[j % Q_LANES] += (double)fabsf(q_load_v(t, src, res, i0 + j));
    float scale = q_mean_scale(q_lanes_sum(lanes), len);
    mpiucc_put_u32(out, q_bits(scale));
    uint8_t *bits = out + 4;
    memset(bits, 0, (len + 7) / 8);
    for (size_t j = 0; j < len; j++) {
        float v = q_load_v(t, src, res, i0 + j);
        uint32_t neg = q_bits(v) >> 31;
        bits[j / 8] |= (uint8_t)(neg << (j & 7));
        if (res) q_store_res(t, src, res, i0 + j, v, q_float(q_bits(scale) | neg << 31));
    }
}

void q_sign_encode_generic(mpiucc_dtype t, const void *src, void *res, size_t n, size_t b,
                           uint8_t *out) {
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b;
        Q_BY_DTYPE(t, sign_encode_block, src, res, i0, len, out);
        out += 4 + (len + 7) / 8;
    }
}

static mpiucc_status sign_encode(const mpiucc_params *p, const void *src, void *res, size_t n,
                                 uint8_t *out, size_t capacity, size_t *size, mpiucc_header *h) {
    mpiucc_dtype t = (mpiucc_dtype)p->dtype;
    size_t b = q_block_of(p);
    uint64_t total = sign_payload(n, b);
    if (capacity < total) return MPIUCC_ERR_CAPACITY;
    q_kernels_for(t)->sign_encode(t, src, res, n, b, out);
    *size = (size_t)total;
    if (q_any_nan_scale(out, n, b, 4 + b / 8)) h->flags |= MPIUCC_FLAG_NONFINITE;
    h->bound = INFINITY;
    h->block = (uint32_t)b;
    return MPIUCC_OK;
}

static mpiucc_status sign_check_header(const mpiucc_header *h) {
    if (h->bound != INFINITY || h->param != 0.0 || !q_block_ok(h->block) || h->aux ||
        h->payload_size != sign_payload(h->count, h->block))
        return MPIUCC_ERR_CORRUPT;
    return MPIUCC_OK;
}

Q_INLINE void sign_decode_block(mpiucc_dtype t, const uint8_t *in, void *dst, size_t i0,
                                size_t len, int add) {
    uint32_t scale = mpiucc_get_u32(in);
    const uint8_t *bits = in + 4;
    for (size_t j = 0; j < len; j++) {
        uint32_t neg = (bits[j / 8] >> (j & 7)) & 1u;
        q_store_out(t, dst, i0 + j, q_float(scale | neg << 31), add);
    }
}

void q_sign_decode_generic(mpiucc_dtype t, const uint8_t *in, void *dst, size_t n, size_t b,
                           int add) {
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b;
        Q_BY_DTYPE(t, sign_decode_block, in, dst, i0, len, add);
        in += 4 + (len + 7) / 8;
    }
}

static mpiucc_status sign_decode(const mpiucc_header *h, const uint8_t *payload, void *dst,
                                 int add) {
    mpiucc_dtype t = (mpiucc_dtype)h->dtype;
    size_t n = (size_t)h->count, b = h->block;
    if ((n & 7) && (payload[h->payload_size - 1] >> (n & 7)))
        return MPIUCC_ERR_CORRUPT; /* padding bits must be zero */
    q_kernels_for(t)->sign_decode(t, payload, dst, n, b, add);
    return MPIUCC_OK;
}

const mpiucc_codec_impl mpiucc_sign_impl = {sign_payload_bound, sign_check_params, sign_encode,
                                            sign_check_header, sign_decode, NULL, NULL};
