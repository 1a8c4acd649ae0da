/* ebq_add.c: exact sums of two ebq frames in the index domain (mpiucc_ebq_add). */
#include <float.h>

#include "ebq.h"

/* The next outlier of a reader: position (UINT64_MAX when none is left) and value. */
typedef struct {
    const uint8_t *rec;
    uint64_t left, pos, next;
    double value; /* widened: exact for f32 */
} outlier_iter;

static void iter_next(outlier_iter *it, size_t es) {
    if (!it->left) {
        it->pos = UINT64_MAX;
        return;
    }
    it->left--;
    it->pos = it->next;
    if (es == 4) {
        float v;
        it->rec = ebq_read_outlier(it->rec, &it->pos, 4, &v);
        it->value = v;
    } else {
        it->rec = ebq_read_outlier(it->rec, &it->pos, 8, &it->value);
    }
    it->next = it->pos + 1;
}

static void iter_init(outlier_iter *it, const ebq_reader *r, size_t es) {
    it->rec = r->outliers;
    it->left = r->n_outliers;
    it->next = 0;
    iter_next(it, es);
}

/* Indices of the next block of r (predictor undone). */
static void block_indices(const ebq_kernels *k, ebq_reader *r, int delta, int32_t *prev,
                          int32_t *q) {
    if (r->dense) {
        uint32_t z[EBQ_BLOCK];
        ebq_reader_block(r, z);
        ebq_z_to_indices(z, delta, prev, q);
    } else {
        unsigned w = r->widths[r->b++];
        k->block_indices(r->packed, w, r->end, delta, prev, q);
        r->packed += 4u * w;
    }
}

static mpiucc_status open_pair(const void *a, size_t a_size, const void *b, size_t b_size,
                               mpiucc_header *ha, mpiucc_header *hb) {
    if (!a || !b) return MPIUCC_ERR_ARG;
    mpiucc_status st = mpiucc_read_header(a, a_size, ha);
    if (st == MPIUCC_OK) st = mpiucc_read_header(b, b_size, hb);
    if (st != MPIUCC_OK) return st;
    if (ha->codec != MPIUCC_CODEC_EBQ || hb->codec != MPIUCC_CODEC_EBQ ||
        ha->dtype != hb->dtype || ha->count != hb->count ||
        memcmp(&ha->param, &hb->param, sizeof(double)))
        return MPIUCC_ERR_MISMATCH;
    return MPIUCC_OK;
}

size_t mpiucc_ebq_add_bound(const void *a, size_t a_size, const void *b, size_t b_size) {
    mpiucc_header ha, hb;
    if (open_pair(a, a_size, b, b_size, &ha, &hb) != MPIUCC_OK) return 0;
    size_t n = ha.count, es = mpiucc_dtype_size((mpiucc_dtype)ha.dtype);
    if (n > (SIZE_MAX >> 8)) return 0;
    /* Both levels keep the outlier count in the first 8 bytes of the payload. */
    uint64_t k = mpiucc_get_u64((const uint8_t *)a + MPIUCC_HEADER_SIZE) +
                 mpiucc_get_u64((const uint8_t *)b + MPIUCC_HEADER_SIZE);
    if (k > n) k = n;
    size_t outl = (size_t)k * (es + 1) + n / 128 + 1;
    size_t body = (ha.aux & 0xff) == MPIUCC_LEVEL_DENSE
                      ? ebq_dense_payload_bound(n, es)
                      : EBQ_SUBHEADER + ebq_nblocks(n) * (1 + 4 * 32);
    return body ? MPIUCC_HEADER_SIZE + body + outl : 0;
}

static int payload_ok(const mpiucc_header *h, const uint8_t *frame) {
    return !(h->flags & MPIUCC_FLAG_PAYLOAD_CHECKSUM) ||
           mpiucc_crc32c(0, frame + MPIUCC_HEADER_SIZE, h->payload_size) == h->payload_checksum;
}

/* Sum of the two inputs' blocks into the writer. */
static mpiucc_status add_blocks(const mpiucc_header *ha, const mpiucc_header *hb, ebq_reader *ra,
                                ebq_reader *rb, ebq_writer *w) {
    size_t n = ha->count, es = mpiucc_dtype_size((mpiucc_dtype)ha->dtype);
    int da = ((ha->aux >> 8) & 0xff) == MPIUCC_PREDICTOR_DELTA;
    int db = ((hb->aux >> 8) & 0xff) == MPIUCC_PREDICTOR_DELTA;
    int ohd = da; /* the result takes a's predictor */
    double step = ha->param;
    outlier_iter oa, ob;
    iter_init(&oa, ra, es);
    iter_init(&ob, rb, es);
    const ebq_kernels *k = ebq_kernels_now();
    int32_t pa = 0, pb = 0, po = 0, qa[EBQ_BLOCK], qb[EBQ_BLOCK];
    uint32_t z[EBQ_BLOCK];
    for (size_t i0 = 0; i0 < n; i0 += EBQ_BLOCK) {
        size_t m = n - i0 < EBQ_BLOCK ? n - i0 : EBQ_BLOCK;
        block_indices(k, ra, da, &pa, qa);
        block_indices(k, rb, db, &pb, qb);
        uint32_t orv = 0;
        if (m == EBQ_BLOCK && oa.pos >= i0 + EBQ_BLOCK && ob.pos >= i0 + EBQ_BLOCK) {
            int ov; /* the common case: a whole block without outliers */
            orv = k->sum_block(qa, qb, ohd, &po, z, &ov);
            if (ov) return MPIUCC_ERR_OVERFLOW;
            if (!ebq_writer_put(w, z, orv)) return MPIUCC_ERR_CAPACITY;
            continue;
        }
        for (size_t i = 0; i < m; i++) {
            uint64_t pos = i0 + i;
            int32_t q;
            if (pos == oa.pos || pos == ob.pos) {
                double va = pos == oa.pos ? oa.value : (double)qa[i] * step;
                double vb = pos == ob.pos ? ob.value : (double)qb[i] * step;
                if (es == 4) {
                    float v = (float)va + (float)vb;
                    ebq_sink_push(&w->sink, pos, &v);
                } else {
                    double v = va + vb;
                    ebq_sink_push(&w->sink, pos, &v);
                }
                if (pos == oa.pos) iter_next(&oa, es);
                if (pos == ob.pos) iter_next(&ob, es);
                q = 0;
            } else {
                int64_t s = (int64_t)qa[i] + qb[i];
                if (s > INT32_MAX || s < INT32_MIN) return MPIUCC_ERR_OVERFLOW;
                q = (int32_t)s;
            }
            orv |= z[i] = ebq_zigzag(ohd ? (int32_t)((uint32_t)q - (uint32_t)po) : q);
            po = q;
        }
        for (size_t i = m; i < EBQ_BLOCK; i++) z[i] = 0;
        if (w->sink.full || !ebq_writer_put(w, z, orv)) return MPIUCC_ERR_CAPACITY;
    }
    return MPIUCC_OK;
}

mpiucc_status mpiucc_ebq_add(const void *a, size_t a_size, const void *b, size_t b_size,
                             void *dst, size_t dst_capacity, size_t *dst_size) {
    mpiucc_header ha, hb;
    mpiucc_status st = open_pair(a, a_size, b, b_size, &ha, &hb);
    if (st != MPIUCC_OK) return st;
    if (!dst || !dst_size) return MPIUCC_ERR_ARG;
    if (!payload_ok(&ha, a) || !payload_ok(&hb, b)) return MPIUCC_ERR_PAYLOAD_CHECKSUM;
    /* Before anything that takes time or memory in proportion to the count: a dense result
     * needs count bytes of scratch, allowed only within the caller's dst_capacity. */
    int dense = (ha.aux & 0xff) == MPIUCC_LEVEL_DENSE;
    if (dst_capacity < MPIUCC_HEADER_SIZE ||
        dst_capacity - MPIUCC_HEADER_SIZE <
            (dense ? ha.count : EBQ_SUBHEADER + ebq_nblocks(ha.count)))
        return MPIUCC_ERR_CAPACITY;
    ebq_reader ra, rb;
    ebq_writer w;
    memset(&w, 0, sizeof w);
    size_t es = mpiucc_dtype_size((mpiucc_dtype)ha.dtype), size = 0;
    uint8_t *out = (uint8_t *)dst;
    st = ebq_reader_init(&ra, &ha, (const uint8_t *)a + MPIUCC_HEADER_SIZE, NULL, 0);
    if (st == MPIUCC_OK)
        st = ebq_reader_init(&rb, &hb, (const uint8_t *)b + MPIUCC_HEADER_SIZE, NULL, 0);
    if (st == MPIUCC_OK)
        st = ebq_writer_init(&w, dense, ha.count, es,
                             out + MPIUCC_HEADER_SIZE, dst_capacity - MPIUCC_HEADER_SIZE);
    if (st == MPIUCC_OK) st = add_blocks(&ha, &hb, &ra, &rb, &w);
    int nonfinite = w.sink.nonfinite;
    if (st == MPIUCC_OK) st = ebq_writer_finish(&w, &size);
    ebq_writer_free(&w);
    if (st != MPIUCC_OK) return st;
    mpiucc_header h = ha;
    h.flags = (ha.flags & MPIUCC_FLAG_PAYLOAD_CHECKSUM) | (nonfinite ? MPIUCC_FLAG_NONFINITE : 0);
    h.bound = ha.bound + hb.bound;
    h.payload_size = size;
    h.payload_checksum = (h.flags & MPIUCC_FLAG_PAYLOAD_CHECKSUM)
                             ? mpiucc_crc32c(0, out + MPIUCC_HEADER_SIZE, size)
                             : 0;
    mpiucc_write_header(out, &h);
    *dst_size = MPIUCC_HEADER_SIZE + size;
    return MPIUCC_OK;
}
