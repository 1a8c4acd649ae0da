/* fp16 and bf16: one 16-bit float per element, round to nearest even. Finite values beyond the
 * format's range saturate to its largest finite value (aux bit 0 records that it happened);
 * NaN stays NaN (quieted) and +-Inf stays +-Inf. */
#include "q_common.h"

static void put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static uint16_t get_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* f64 -> 16-bit float with one rounding: saturate in f64, round to odd into f32, then round
 * to nearest even into the 16-bit format. */
static uint16_t f64_to_f16_sat(double d, uint32_t *seen) {
    double a = fabs(d);
    if (!(a < INFINITY)) *seen |= Q_SEEN_NONFINITE;
    if (a > (double)Q_F16_MAX && a < INFINITY) {
        *seen |= Q_FLAG_SATURATED;
        d = copysign((double)Q_F16_MAX, d);
    }
    return mpiucc_f32_to_f16(q_f64_to_f32_odd(d));
}
static uint16_t f64_to_bf16_sat(double d, uint32_t *seen) {
    double a = fabs(d), top = (double)q_float(Q_BF16_MAX_BITS);
    if (!(a < INFINITY)) *seen |= Q_SEEN_NONFINITE;
    if (a > top && a < INFINITY) {
        *seen |= Q_FLAG_SATURATED;
        d = copysign(top, d);
    }
    return q_f32_to_bf16_sat(q_f64_to_f32_odd(d));
}

#define BF16_MAX 3.38953139e38f /* 0x7f7f0000 */

static inline uint16_t narrow(int fp16, float v) {
    return fp16 ? q_f32_to_f16_sat(v) : q_f32_to_bf16_sat(v);
}
static inline float widen(int fp16, uint16_t h) {
    return fp16 ? q_f16_to_f32(h) : mpiucc_bf16_to_f32(h);
}

static size_t half_payload_bound(const mpiucc_params *p, size_t n) {
    (void)p;
    if ((uint64_t)n > Q_COUNT_MAX) return 0;
    return q_bound(2 * (uint64_t)n);
}

static mpiucc_status half_check_params(const mpiucc_params *p) {
    if (p->block_size || p->levels || p->rounding != MPIUCC_ROUND_NEAREST) return MPIUCC_ERR_ARG;
    return MPIUCC_OK;
}

Q_INLINE void half_encode_generic(mpiucc_dtype t, int fp16, const void *src, void *res,
                                 size_t n, uint8_t *out, uint32_t *seen) {
    if (t == MPIUCC_DTYPE_F64) {
        const double *s = (const double *)src;
        double *r = (double *)res;
        for (size_t i = 0; i < n; i++) {
            double v = r ? s[i] + r[i] : s[i];
            uint16_t h = fp16 ? f64_to_f16_sat(v, seen) : f64_to_bf16_sat(v, seen);
            put_u16(out + 2 * i, h);
            if (r) r[i] = q_res_f64(v - (double)widen(fp16, h));
        }
        return;
    }
    float top = fp16 ? Q_F16_MAX : BF16_MAX;
    uint32_t over = 0, nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        float v = q_load_v(t, src, res, i), a = fabsf(v);
        over |= a > top && a < INFINITY;
        nonfinite |= !(a < INFINITY);
        uint16_t h = narrow(fp16, v);
        put_u16(out + 2 * i, h);
        if (res) q_store_res(t, src, res, i, v, widen(fp16, h));
    }
    if (over) *seen |= Q_FLAG_SATURATED;
    if (nonfinite) *seen |= Q_SEEN_NONFINITE;
}

Q_INLINE void half_decode_generic(mpiucc_dtype t, int fp16, const uint8_t *payload, void *dst,
                                  size_t n, int add) {
    for (size_t i = 0; i < n; i++)
        q_store_out(t, dst, i, widen(fp16, get_u16(payload + 2 * i)), add);
}

void q_half_encode_generic(mpiucc_dtype t, int fp16, const void *src, void *res, size_t n,
                           uint8_t *out, uint32_t *seen) {
    if (fp16)
        Q_BY_DTYPE(t, half_encode_generic, 1, src, res, n, out, seen);
    else
        Q_BY_DTYPE(t, half_encode_generic, 0, src, res, n, out, seen);
}

void q_half_decode_generic(mpiucc_dtype t, int fp16, const uint8_t *in, void *dst, size_t n,
                           int add) {
    if (fp16)
        Q_BY_DTYPE(t, half_decode_generic, 1, in, dst, n, add);
    else
        Q_BY_DTYPE(t, half_decode_generic, 0, in, dst, n, add);
}

static mpiucc_status half_encode(int fp16, const mpiucc_params *p, const void *src, void *res,
                                 size_t n, uint8_t *out, size_t capacity, size_t *size,
                                 mpiucc_header *h) {
    mpiucc_dtype t = (mpiucc_dtype)p->dtype;
    if (capacity / 2 < n) return MPIUCC_ERR_CAPACITY;
    uint32_t seen = 0;
    q_kernels_for(t)->half_encode(t, fp16, src, res, n, out, &seen);
    *size = 2 * n;
    h->bound = INFINITY;
    h->aux = seen & Q_FLAG_SATURATED;
    if (seen & Q_SEEN_NONFINITE) h->flags |= MPIUCC_FLAG_NONFINITE;
    return MPIUCC_OK;
}

static mpiucc_status half_check_header(const mpiucc_header *h) {
    if (h->bound != INFINITY || h->param != 0.0 || h->block || (h->aux & ~Q_FLAG_SATURATED) ||
        h->payload_size != 2 * h->count)
        return MPIUCC_ERR_CORRUPT;
    return MPIUCC_OK;
}

static mpiucc_status half_decode(int fp16, const mpiucc_header *h, const uint8_t *payload,
                                 void *dst, int add) {
    mpiucc_dtype t = (mpiucc_dtype)h->dtype;
    q_kernels_for(t)->half_decode(t, fp16, payload, dst, (size_t)h->count, add);
    return MPIUCC_OK;
}

static mpiucc_status fp16_encode(const mpiucc_params *p, const void *src, void *res, size_t n,
                                 uint8_t *out, size_t capacity, size_t *size, mpiucc_header *h) {
    return half_encode(1, p, src, res, n, out, capacity, size, h);
}
static mpiucc_status fp16_decode(const mpiucc_header *h, const uint8_t *payload, void *dst,
                                 int add) {
    return half_decode(1, h, payload, dst, add);
}
static mpiucc_status bf16_encode(const mpiucc_params *p, const void *src, void *res, size_t n,
                                 uint8_t *out, size_t capacity, size_t *size, mpiucc_header *h) {
    return half_encode(0, p, src, res, n, out, capacity, size, h);
}
static mpiucc_status bf16_decode(const mpiucc_header *h, const uint8_t *payload, void *dst,
                                 int add) {
    return half_decode(0, h, payload, dst, add);
}

const mpiucc_codec_impl mpiucc_fp16_impl = {half_payload_bound, half_check_params, fp16_encode,
                                            half_check_header, fp16_decode, NULL, NULL};
const mpiucc_codec_impl mpiucc_bf16_impl = {half_payload_bound, half_check_params, bf16_encode,
                                            half_check_header, bf16_decode, NULL, NULL};
