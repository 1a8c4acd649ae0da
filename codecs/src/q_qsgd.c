/* qsgd: s-level quantization against the block's L2 norm. Element v gets the level
 * l = round(|v| / norm * s) in 0..s (stochastic rounding: unbiased), stored as the code
 * s + l, or s - l when v's sign bit is set, in w = ceil(log2(2s + 1)) bits, packed LSB first.
 * Each block is its f32 norm followed by its packed codes; code c decodes to (c - s) * norm / s. */
#include "q_common.h"

/* Bits per code of s levels: the 2s + 1 codes 0..2s. */
static int code_width(uint32_t s) {
    int w = 1;
    while ((1u << w) < 2 * s + 1) w++;
    return w;
}

static uint64_t qsgd_payload(uint64_t n, uint64_t b, int w) {
    return 4 * q_nblocks(n, b) + (n * (uint64_t)w + 7) / 8; /* full blocks fill whole bytes */
}

static size_t qsgd_payload_bound(const mpiucc_params *p, size_t n) {
    if ((uint64_t)n > Q_COUNT_MAX) return 0;
    uint64_t s = qsgd_payload(n, q_block_of(p), code_width(q_levels_of(p)));
    return q_bound(s);
}

static mpiucc_status qsgd_check_params(const mpiucc_params *p) {
    if (!q_block_ok(q_block_of(p)) || q_levels_of(p) < 1 || q_levels_of(p) > 127 ||
        p->rounding > MPIUCC_ROUND_STOCHASTIC)
        return MPIUCC_ERR_ARG;
    return MPIUCC_OK;
}

Q_INLINE void qsgd_encode_block(mpiucc_dtype t, const void *src, void *res, size_t i0,
                                size_t len, uint32_t levels, int stochastic, q_rng *rng, int w,
                                uint8_t *out) {
    double lanes[Q_LANES] = {0};
    for (size_t j = 0; j < len; j++) {
        double v = q_load_v(t, src, res, i0 + j);
        lanes[j % Q_LANES] += v * v;
    }
    q_qsgd_block qb = q_qsgd_scales(q_lanes_sum(lanes), levels);
    mpiucc_put_u32(out, q_bits(qb.norm));
    uint8_t *o = out + 4;
    uint64_t acc = 0;
    int nacc = 0;
    for (size_t j = 0; j < len; j++) {
        float v = q_load_v(t, src, res, i0 + j);
        int code = q_qsgd_code(&qb, v, levels, stochastic, rng, i0 + j);
        acc |= (uint64_t)code << nacc;
        for (nacc += w; nacc >= 8; nacc -= 8) {
            *o++ = (uint8_t)acc;
            acc >>= 8;
        }
        if (res) q_store_res(t, src, res, i0 + j, v, (float)(code - (int)levels) * qb.step);
    }
    if (nacc) *o = (uint8_t)acc;
}

void q_qsgd_encode_generic(mpiucc_dtype t, const void *src, void *res, size_t n, size_t b,
                           uint32_t levels, int w, int stochastic, uint64_t seed, uint8_t *out,
                           size_t size) {
    (void)size;
    q_rng rng = q_rng_init(seed);
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b;
        Q_BY_DTYPE(t, qsgd_encode_block, src, res, i0, len, levels, stochastic, &rng, w, out);
        out += 4 + (len * (size_t)w + 7) / 8;
    }
}

static mpiucc_status qsgd_encode(const mpiucc_params *p, const void *src, void *res, size_t n,
                                 uint8_t *out, size_t capacity, size_t *size, mpiucc_header *h) {
    size_t b = q_block_of(p);
    int w = code_width(q_levels_of(p));
    uint64_t total = qsgd_payload(n, b, w);
    if (capacity < total) return MPIUCC_ERR_CAPACITY;
    mpiucc_dtype t = (mpiucc_dtype)p->dtype;
    q_kernels_for(t)->qsgd_encode(t, src, res, n, b, q_levels_of(p), w,
                                  p->rounding == MPIUCC_ROUND_STOCHASTIC, p->seed, out,
                                  (size_t)total);
    *size = (size_t)total;
    if (q_any_nan_scale(out, n, b, 4 + b * (size_t)w / 8)) h->flags |= MPIUCC_FLAG_NONFINITE;
    h->bound = INFINITY;
    h->block = (uint32_t)b;
    h->aux = q_levels_of(p) | p->rounding << 8;
    return MPIUCC_OK;
}

static mpiucc_status qsgd_check_header(const mpiucc_header *h) {
    uint32_t s = h->aux & 0xffu;
    if (h->bound != INFINITY || h->param != 0.0 || !q_block_ok(h->block) || s < 1 || s > 127 ||
        (h->aux >> 8) > MPIUCC_ROUND_STOCHASTIC ||
        h->payload_size != qsgd_payload(h->count, h->block, code_width(s)))
        return MPIUCC_ERR_CORRUPT;
    return MPIUCC_OK;
}

Q_INLINE void qsgd_decode_block(mpiucc_dtype t, const uint8_t *in, void *dst, size_t i0,
                                size_t len, int s, int w, int add) {
    float step = q_float(mpiucc_get_u32(in)) / (float)s;
    const uint8_t *c = in + 4;
    uint64_t acc = 0, mask = (1u << w) - 1;
    int nacc = 0;
    for (size_t j = 0; j < len; j++) {
        if (nacc < w) { /* never reads past the block: its codes fill ceil(len w / 8) bytes */
            acc |= (uint64_t)*c++ << nacc;
            nacc += 8;
        }
        int code = (int)(acc & mask);
        acc >>= w;
        nacc -= w;
        q_store_out(t, dst, i0 + j, (float)(code - s) * step, add);
    }
}

void q_qsgd_decode_generic(mpiucc_dtype t, const uint8_t *in, void *dst, size_t n, size_t b,
                           uint32_t levels, int w, int add, size_t size) {
    (void)size;
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b;
        Q_BY_DTYPE(t, qsgd_decode_block, in, dst, i0, len, (int)levels, w, add);
        in += 4 + (len * (size_t)w + 7) / 8;
    }
}

static mpiucc_status qsgd_decode(const mpiucc_header *h, const uint8_t *payload, void *dst,
                                 int add) {
    mpiucc_dtype t = (mpiucc_dtype)h->dtype;
    size_t n = (size_t)h->count, b = h->block;
    int s = (int)(h->aux & 0xffu), w = code_width((uint32_t)s);
    unsigned pad = (unsigned)((n * (size_t)w) & 7);
    if (pad && (payload[h->payload_size - 1] >> pad)) return MPIUCC_ERR_CORRUPT;
    q_kernels_for(t)->qsgd_decode(t, payload, dst, n, b, (uint32_t)s, w, add,
                                  (size_t)h->payload_size);
    return MPIUCC_OK;
}

const mpiucc_codec_impl mpiucc_qsgd_impl = {qsgd_payload_bound, qsgd_check_params, qsgd_encode,
                                            qsgd_check_header, qsgd_decode, NULL, NULL};
