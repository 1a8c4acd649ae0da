/* topk: per block, the k = levels elements of largest |v| (ties: lower position first; NaN
 * counts as larger than Inf, Inf as larger than any finite value), as m = min(k, len) u16
 * positions in increasing order followed by their m f32 values. Others decode to 0. */
#include "q_common.h"

static uint64_t topk_payload(uint64_t n, uint64_t b, uint64_t k) {
    uint64_t last = n % b, full = n / b;
    return 6 * (full * (k < b ? k : b) + (k < last ? k : last));
}

static size_t topk_payload_bound(const mpiucc_params *p, size_t n) {
    if ((uint64_t)n > Q_COUNT_MAX) return 0;
    uint64_t s = topk_payload(n, q_block_of(p), q_levels_of(p));
    return q_bound(s);
}

static mpiucc_status topk_check_params(const mpiucc_params *p) {
    uint32_t b = q_block_of(p);
    if (!q_block_ok(b) || q_levels_of(p) > b || p->rounding != MPIUCC_ROUND_NEAREST)
        return MPIUCC_ERR_ARG;
    return MPIUCC_OK;
}

/* Rank of element j of value v: larger is kept first (|v| as bits, then lower position). */
static inline uint64_t rank_of(float v, size_t j) {
    return (uint64_t)(q_bits(v) & 0x7fffffffu) << 32 | (uint32_t)~(uint32_t)j;
}

#define HEAP_MAX 1024 /* m up to this: a heap of the m best ranks; beyond: radix select */

static void sift_down(uint64_t *heap, size_t m, size_t i) {
    uint64_t x = heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && heap[c + 1] < heap[c]) c++;
        if (heap[c] >= x) break;
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = x;
}

/* The m-th largest rank of the block: everything ranked at or above it is kept. */
Q_INLINE uint64_t threshold(mpiucc_dtype t, const void *src, const void *res, size_t i0,
                            size_t len, size_t m) {
    if (m <= HEAP_MAX) {
        uint64_t heap[HEAP_MAX];
        for (size_t j = 0; j < m; j++) heap[j] = rank_of(q_load_v(t, src, res, i0 + j), j);
        for (size_t i = m / 2; i-- > 0;) sift_down(heap, m, i);
        for (size_t j = m; j < len; j++) {
            uint64_t r = rank_of(q_load_v(t, src, res, i0 + j), j);
            if (r > heap[0]) {
                heap[0] = r;
                sift_down(heap, m, 0);
            }
        }
        return heap[0];
    }
    /* radix select on |v| bits, 8 per pass; then the need-th position among equal keys */
    uint32_t prefix = 0, pmask = 0;
    size_t need = m;
    for (int shift = 24; shift >= 0; shift -= 8) {
        uint32_t hist[256] = {0};
        for (size_t j = 0; j < len; j++) {
            uint32_t key = q_bits(q_load_v(t, src, res, i0 + j)) & 0x7fffffffu;
            if ((key & pmask) == prefix) hist[(key >> shift) & 0xffu]++;
        }
        int d = 255;
        while (d > 0 && hist[d] < need) need -= hist[d--];
        prefix |= (uint32_t)d << shift;
        pmask |= 0xffu << shift;
    }
    size_t j = 0;
    for (;; j++)
        if ((q_bits(q_load_v(t, src, res, i0 + j)) & 0x7fffffffu) == prefix && !--need) break;
    return (uint64_t)prefix << 32 | (uint32_t)~(uint32_t)j;
}

Q_INLINE void topk_encode_block(mpiucc_dtype t, const void *src, void *res, size_t i0,
                                size_t len, size_t m, uint8_t *out, uint32_t *nonfinite) {
    uint64_t thr = m < len ? threshold(t, src, res, i0, len, m) : 0;
    uint8_t *pos = out, *val = out + 2 * m;
    for (size_t j = 0; j < len; j++) {
        float v = q_load_v(t, src, res, i0 + j);
        int keep = rank_of(v, j) >= thr;
        if (keep) {
            pos[0] = (uint8_t)j;
            pos[1] = (uint8_t)(j >> 8);
            mpiucc_put_u32(val, q_bits(v));
            *nonfinite |= (uint32_t)q_nonfinite(v);
            pos += 2;
            val += 4;
        }
        if (res) q_store_res(t, src, res, i0 + j, v, keep ? v : 0.0f);
    }
}

static mpiucc_status topk_encode(const mpiucc_params *p, const void *src, void *res, size_t n,
                                 uint8_t *out, size_t capacity, size_t *size, mpiucc_header *h) {
    size_t b = q_block_of(p), k = q_levels_of(p);
    uint64_t total = topk_payload(n, b, k);
    if (capacity < total) return MPIUCC_ERR_CAPACITY;
    uint8_t *o = out;
    uint32_t nonfinite = 0; /* a kept value: one is kept in every block that holds any */
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b, m = k < len ? k : len;
        Q_BY_DTYPE((mpiucc_dtype)p->dtype, topk_encode_block, src, res, i0, len, m, o,
                   &nonfinite);
        o += 6 * m;
    }
    if (nonfinite) h->flags |= MPIUCC_FLAG_NONFINITE;
    *size = (size_t)total;
    h->bound = INFINITY;
    h->block = (uint32_t)b;
    h->aux = (uint32_t)k;
    return MPIUCC_OK;
}

static mpiucc_status topk_check_header(const mpiucc_header *h) {
    if (h->bound != INFINITY || h->param != 0.0 || !q_block_ok(h->block) || h->aux < 1 ||
        h->aux > h->block || h->payload_size != topk_payload(h->count, h->block, h->aux))
        return MPIUCC_ERR_CORRUPT;
    return MPIUCC_OK;
}

static mpiucc_status topk_decode(const mpiucc_header *h, const uint8_t *payload, void *dst,
                                 int add) {
    mpiucc_dtype t = (mpiucc_dtype)h->dtype;
    size_t n = (size_t)h->count, b = h->block, k = h->aux;
    /* positions first: strictly increasing inside their block, so no write leaves it */
    const uint8_t *in = payload;
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b, m = k < len ? k : len;
        long prev = -1;
        for (size_t e = 0; e < m; e++) {
            long j = in[2 * e] | in[2 * e + 1] << 8;
            if (j <= prev || (size_t)j >= len) return MPIUCC_ERR_CORRUPT;
            prev = j;
        }
        in += 6 * m;
    }
    if (!add && n) memset(dst, 0, n * mpiucc_dtype_size(t)); /* zero bits are +0 in every dtype */
    in = payload;
    for (size_t i0 = 0; i0 < n; i0 += b) {
        size_t len = n - i0 < b ? n - i0 : b, m = k < len ? k : len;
        for (size_t e = 0; e < m; e++) {
            size_t j = (size_t)(in[2 * e] | in[2 * e + 1] << 8);
            q_store_out(t, dst, i0 + j, q_float(mpiucc_get_u32(in + 2 * m + 4 * e)), add);
        }
        in += 6 * m;
    }
    return MPIUCC_OK;
}

const mpiucc_codec_impl mpiucc_topk_impl = {topk_payload_bound, topk_check_params, topk_encode,
                                            topk_check_header, topk_decode, NULL, NULL};
