/* ebq_add.c: exact sums of two ebq frames in the index domain (mpiucc_ebq_add). */
#include <float.h>
#include <stdlib.h>

#include "ebq_segments.h"

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

/* Where one segment of the sum starts in each input. */
typedef struct {
    ebq_reader ra, rb;
    outlier_iter oa, ob;
    int32_t pa, pb, po; /* predictors' previous indices */
} add_cursor;

/* Sum of the inputs' elements [i0, i1) (whole blocks but the last) into the writer. */
static mpiucc_status add_range(const mpiucc_header *ha, const mpiucc_header *hb, add_cursor *c,
                               size_t i0, size_t i1, ebq_writer *w) {
    size_t es = mpiucc_dtype_size((mpiucc_dtype)ha->dtype);
    int da = ((ha->aux >> 8) & 0xff) == MPIUCC_PREDICTOR_DELTA;
    int db = ((hb->aux >> 8) & 0xff) == MPIUCC_PREDICTOR_DELTA;
    int ohd = da; /* the result takes a's predictor */
    double step = ha->param;
    ebq_reader *ra = &c->ra, *rb = &c->rb;
    outlier_iter *oa = &c->oa, *ob = &c->ob;
    const ebq_kernels *k = ebq_kernels_now();
    int32_t qa[EBQ_BLOCK], qb[EBQ_BLOCK];
    uint32_t z[EBQ_BLOCK];
    for (; i0 < i1; i0 += EBQ_BLOCK) {
        size_t m = i1 - i0 < EBQ_BLOCK ? i1 - i0 : EBQ_BLOCK;
        block_indices(k, ra, da, &c->pa, qa);
        block_indices(k, rb, db, &c->pb, qb);
        uint32_t orv = 0;
        if (m == EBQ_BLOCK && oa->pos >= i0 + EBQ_BLOCK && ob->pos >= i0 + EBQ_BLOCK) {
            int ov; /* the common case: a whole block without outliers */
            orv = k->sum_block(qa, qb, ohd, &c->po, z, &ov);
            if (ov) return MPIUCC_ERR_OVERFLOW;
            if (!ebq_writer_put(w, z, orv)) return MPIUCC_ERR_CAPACITY;
            continue;
        }
        for (size_t i = 0; i < m; i++) {
            uint64_t pos = i0 + i;
            int32_t q;
            if (pos == oa->pos || pos == ob->pos) {
                double va = pos == oa->pos ? oa->value : (double)qa[i] * step;
                double vb = pos == ob->pos ? ob->value : (double)qb[i] * step;
                if (es == 4) {
                    float v = (float)va + (float)vb;
                    ebq_sink_push(&w->sink, pos, &v);
                } else {
                    double v = va + vb;
                    ebq_sink_push(&w->sink, pos, &v);
                }
                if (pos == oa->pos) iter_next(oa, es);
                if (pos == ob->pos) iter_next(ob, es);
                q = 0;
            } else {
                int64_t sum = (int64_t)qa[i] + qb[i];
                if (sum > INT32_MAX || sum < INT32_MIN) return MPIUCC_ERR_OVERFLOW;
                q = (int32_t)sum;
            }
            orv |= z[i] = ebq_zigzag(ohd ? (int32_t)((uint32_t)q - (uint32_t)c->po) : q);
            c->po = q;
        }
        for (size_t i = m; i < EBQ_BLOCK; i++) z[i] = 0;
        if (w->sink.full || !ebq_writer_put(w, z, orv)) return MPIUCC_ERR_CAPACITY;
    }
    return MPIUCC_OK;
}

/* Threads: fast inputs without predictor, whose blocks can be found without decoding. */
typedef struct {
    ebq_segs segs;
    const mpiucc_header *ha, *hb;
    add_cursor *cur; /* one per segment (heap: a reader holds 48 KiB) */
} add_job;

static void add_segment(void *ctx, int t) {
    add_job *J = (add_job *)ctx;
    ebq_seg *s = &J->segs.seg[t];
    s->st = add_range(J->ha, J->hb, &J->cur[t], s->i0, s->i1, s->w);
}

/* c's reader and outlier iterator moved from element i to element i1 (block-aligned). */
static void skip_to(ebq_reader *r, outlier_iter *o, size_t i1, size_t es) {
    for (size_t b1 = i1 / EBQ_BLOCK; r->b < b1; r->b++) r->packed += 4u * r->widths[r->b];
    while (o->pos < i1) iter_next(o, es);
}

static mpiucc_status add_threads(const mpiucc_header *ha, const mpiucc_header *hb,
                                 add_cursor *c0, ebq_writer *w, int threads, size_t *size) {
    add_job J;
    J.ha = ha;
    J.hb = hb;
    size_t n = ha->count, es = mpiucc_dtype_size((mpiucc_dtype)ha->dtype);
    J.cur = (add_cursor *)malloc((size_t)threads * sizeof *J.cur);
    if (!J.cur) return MPIUCC_ERR_NOMEM;
    if (!ebq_segs_open(&J.segs, w, n, threads, 0)) {
        free(J.cur);
        return MPIUCC_ERR_NOMEM;
    }
    J.cur[0] = *c0;
    for (int t = 1; t < threads; t++) {
        J.cur[t] = J.cur[t - 1];
        skip_to(&J.cur[t].ra, &J.cur[t].oa, J.segs.seg[t].i0, es);
        skip_to(&J.cur[t].rb, &J.cur[t].ob, J.segs.seg[t].i0, es);
    }
    mpiucc_parallel(threads, add_segment, &J);
    mpiucc_status st = MPIUCC_OK;
    for (int t = 0; t < threads && st == MPIUCC_OK; t++) st = J.segs.seg[t].st;
    if (st == MPIUCC_OK) st = ebq_segs_merge(&J.segs, n, size);
    ebq_segs_close(&J.segs);
    free(J.cur);
    return st;
}

mpiucc_status mpiucc_ebq_add(const void *a, size_t a_size, const void *b, size_t b_size,
                             void *dst, size_t dst_capacity, size_t *dst_size) {
    return mpiucc_ebq_add_threads(a, a_size, b, b_size, dst, dst_capacity, 0, dst_size);
}

mpiucc_status mpiucc_ebq_add_threads(const void *a, size_t a_size, const void *b, size_t b_size,
                                     void *dst, size_t dst_capacity, unsigned threads,
                                     size_t *dst_size) {
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
    add_cursor c;
    ebq_writer w;
    memset(&w, 0, sizeof w);
    size_t es = mpiucc_dtype_size((mpiucc_dtype)ha.dtype), size = 0;
    uint8_t *out = (uint8_t *)dst;
    st = ebq_reader_init(&c.ra, &ha, (const uint8_t *)a + MPIUCC_HEADER_SIZE, NULL, 0, 1);
    if (st == MPIUCC_OK)
        st = ebq_reader_init(&c.rb, &hb, (const uint8_t *)b + MPIUCC_HEADER_SIZE, NULL, 0, 1);
    if (st == MPIUCC_OK)
        st = ebq_writer_init(&w, dense, ha.count, es,
                             out + MPIUCC_HEADER_SIZE, dst_capacity - MPIUCC_HEADER_SIZE);
    w.threads = threads;
    int nt = 1;
    if (st == MPIUCC_OK) {
        iter_init(&c.oa, &c.ra, es);
        iter_init(&c.ob, &c.rb, es);
        c.pa = c.pb = c.po = 0;
        if (!c.ra.dense && !c.rb.dense && !(ha.aux >> 8) && !(hb.aux >> 8))
            nt = mpiucc_threads_for(threads, ha.count);
    }
    if (nt > 1) {
        st = add_threads(&ha, &hb, &c, &w, nt, &size);
        if (st == MPIUCC_ERR_NOMEM) nt = 1;
    }
    if (st == MPIUCC_OK && nt == 1) st = add_range(&ha, &hb, &c, 0, ha.count, &w);
    if (st == MPIUCC_OK && nt == 1) st = ebq_writer_finish(&w, &size);
    int nonfinite = w.sink.nonfinite;
    ebq_writer_free(&w);
    if (st != MPIUCC_OK) return st;
    mpiucc_header h = ha;
    h.version = dense ? 3 : 1; /* a dense sum is written as v3 */
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
