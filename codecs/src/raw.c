/* raw: a lossless copy. The baseline every other codec is measured against. */
#include "internal.h"

static size_t raw_payload_bound(const mpiucc_params *p, size_t n) {
    size_t es = mpiucc_dtype_size((mpiucc_dtype)p->dtype);
    return n > (SIZE_MAX - 64) / es ? 0 : n * es + 1; /* +1: never 0, which means invalid */
}

static mpiucc_status raw_check_params(const mpiucc_params *p) {
    (void)p;
    return MPIUCC_OK;
}

/* Copy n elements of es bytes (as unsigned words W) and tell whether any is NaN or +-Inf,
 * i.e. has all the bits of exp set; one pass, which the compiler vectorizes. */
#define RAW_COPY_CHECK(W, exp)                                            \
    do {                                                                  \
        const W *s = (const W *)src;                                      \
        W nonfinite = 0;                                                  \
        for (size_t i = 0; i < n; i++) {                                  \
            W u = s[i];                                                   \
            memcpy(out + i * sizeof(W), &u, sizeof(W));                   \
            nonfinite |= (W)((u & (W)(exp)) == (W)(exp));                 \
        }                                                                 \
        return nonfinite != 0;                                            \
    } while (0)

static int raw_copy(mpiucc_dtype t, const void *src, size_t n, uint8_t *out) {
    switch (t) {
    case MPIUCC_DTYPE_F32: RAW_COPY_CHECK(uint32_t, 0x7f800000u);
    case MPIUCC_DTYPE_F64: RAW_COPY_CHECK(uint64_t, 0x7ff0000000000000u);
    case MPIUCC_DTYPE_F16: RAW_COPY_CHECK(uint16_t, 0x7c00u);
    default: RAW_COPY_CHECK(uint16_t, 0x7f80u);
    }
}

static mpiucc_status raw_encode(const mpiucc_params *p, const void *src, void *residual,
                                size_t n, uint8_t *out, size_t capacity, size_t *size,
                                mpiucc_header *h) {
    mpiucc_dtype t = (mpiucc_dtype)p->dtype;
    size_t bytes = n * mpiucc_dtype_size(t);
    if (capacity < bytes) return MPIUCC_ERR_CAPACITY;
    int nonfinite = 0;
    if (residual) { /* v = src + residual is sent as is; what rounding to the dtype lost stays */
        size_t es = mpiucc_dtype_size(t);
        for (size_t i = 0; i < n; i++) {
            uint8_t sent[8];
            double v = mpiucc_load(t, src, i) + mpiucc_load(t, residual, i);
            mpiucc_store(t, sent, 0, v);
            memcpy(out + i * es, sent, es);
            double y = mpiucc_load(t, sent, 0), r = v - y;
            nonfinite |= !isfinite(y);
            mpiucc_store(t, residual, i, isfinite(r) ? r : 0.0); /* NaN, Inf: the frame has it */
        }
    } else {
        nonfinite = raw_copy(t, src, n, out);
    }
    if (nonfinite) h->flags |= MPIUCC_FLAG_NONFINITE;
    *size = bytes;
    h->bound = 0.0;
    return MPIUCC_OK;
}

static mpiucc_status raw_check_header(const mpiucc_header *h) {
    size_t es = mpiucc_dtype_size((mpiucc_dtype)h->dtype);
    if (h->block || h->aux || h->param != 0.0 || h->bound != 0.0 ||
        h->count > UINT64_MAX / es || h->payload_size != h->count * es)
        return MPIUCC_ERR_CORRUPT;
    return MPIUCC_OK;
}

static mpiucc_status raw_decode(const mpiucc_header *h, const uint8_t *payload, void *dst,
                                int add) {
    mpiucc_dtype t = (mpiucc_dtype)h->dtype;
    if (!add) {
        if (h->count) memcpy(dst, payload, h->payload_size);
        return MPIUCC_OK;
    }
    size_t es = mpiucc_dtype_size(t);
    for (size_t i = 0; i < h->count; i++) {
        uint8_t v[8]; /* the payload may be unaligned */
        memcpy(v, payload + i * es, es);
        mpiucc_store(t, dst, i, mpiucc_load(t, dst, i) + mpiucc_load(t, v, 0));
    }
    return MPIUCC_OK;
}

const mpiucc_codec_impl mpiucc_raw_impl = {raw_payload_bound, raw_check_params, raw_encode,
                                           raw_check_header, raw_decode, NULL, NULL};
