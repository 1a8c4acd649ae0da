/* ebq.c: the ebq codec's frame-level side: parameters, the grid, the fast-level payload
 * (sub-header, width bytes, packed blocks, outlier records) and mpiucc_ebq_quantize. */
#include <float.h>
#include <stdlib.h>

#include "ebq_segments.h"

/* ---- outlier records: [varint gap][value, es bytes], gap = pos - previous pos - 1 ---- */

void ebq_sink_push(ebq_sink *s, uint64_t pos, const void *value) {
    uint64_t gap = pos - s->next;
    s->next = pos + 1;
    if (s->es == 4) {
        float v;
        memcpy(&v, value, 4);
        s->nonfinite |= !isfinite(v);
    } else {
        double v;
        memcpy(&v, value, 8);
        s->nonfinite |= !isfinite(v);
    }
    if (s->pos) { /* list mode */
        if (s->count < s->pos_cap) s->pos[s->count] = pos;
        s->count++;
        return;
    }
    size_t len = ebq_varint_size(gap) + s->es;
    if (s->full || (size_t)(s->lo - s->floor) < len) {
        s->full = 1;
        return;
    }
    /* Staged byte-reversed, growing downwards: reversing the whole area at the end puts the
     * records in order with their bytes forwards. */
    while (gap >= 0x80) {
        *--s->lo = (uint8_t)(gap | 0x80);
        gap >>= 7;
    }
    *--s->lo = (uint8_t)gap;
    uint8_t le[8];
    if (s->es == 4) {
        uint32_t u;
        memcpy(&u, value, 4);
        mpiucc_put_u32(le, u);
    } else {
        uint64_t u;
        memcpy(&u, value, 8);
        mpiucc_put_u64(le, u);
    }
    for (size_t i = 0; i < s->es; i++) *--s->lo = le[i];
    s->count++;
}

size_t ebq_sink_finish(ebq_sink *s, uint8_t *dst) {
    size_t f = (size_t)(s->top - s->lo);
    if (!f) return 0;
    memmove(dst, s->lo, f);
    for (size_t i = 0, j = f - 1; i < j; i++, j--) {
        uint8_t t = dst[i];
        dst[i] = dst[j];
        dst[j] = t;
    }
    return f;
}

mpiucc_status ebq_check_outliers(const uint8_t *rec, const uint8_t *end, uint64_t k,
                                 uint64_t n, size_t es) {
    uint64_t next = 0;
    for (uint64_t j = 0; j < k; j++) {
        uint64_t gap = 0;
        unsigned shift = 0;
        for (;;) {
            if (rec >= end || shift > 63) return MPIUCC_ERR_CORRUPT;
            uint8_t c = *rec++;
            if (shift == 63 && c > 1) return MPIUCC_ERR_CORRUPT;
            gap |= (uint64_t)(c & 0x7f) << shift;
            if (!(c & 0x80)) {
                if (!c && shift) return MPIUCC_ERR_CORRUPT; /* overlong */
                break;
            }
            shift += 7;
        }
        if (gap >= n - next) return MPIUCC_ERR_CORRUPT; /* position >= n */
        next += gap + 1;
        if ((size_t)(end - rec) < es) return MPIUCC_ERR_CORRUPT;
        rec += es;
    }
    return rec == end ? MPIUCC_OK : MPIUCC_ERR_CORRUPT;
}

const uint8_t *ebq_read_outlier(const uint8_t *rec, uint64_t *pos, size_t es, void *value) {
    uint64_t gap = 0;
    unsigned shift = 0;
    uint8_t c;
    do {
        c = *rec++;
        gap |= (uint64_t)(c & 0x7f) << shift;
        shift += 7;
    } while (c & 0x80);
    *pos += gap;
    if (es == 4) {
        uint32_t u = mpiucc_get_u32(rec);
        memcpy(value, &u, 4);
    } else {
        uint64_t u = mpiucc_get_u64(rec);
        memcpy(value, &u, 8);
    }
    return rec + es;
}

/* ---- parameters and grid ---- */

static mpiucc_status ebq_check_params(const mpiucc_params *p) {
    if (p->dtype != MPIUCC_DTYPE_F32 && p->dtype != MPIUCC_DTYPE_F64)
        return MPIUCC_ERR_UNSUPPORTED;
    if (!(p->error_bound > 0) || !(p->error_bound <= DBL_MAX)) return MPIUCC_ERR_ARG;
    if (p->mode > MPIUCC_MODE_RMS || p->predictor > MPIUCC_PREDICTOR_DELTA ||
        p->level > MPIUCC_LEVEL_DENSE || (p->block_size && p->block_size != EBQ_BLOCK) ||
        p->levels || p->rounding != MPIUCC_ROUND_NEAREST)
        return MPIUCC_ERR_ARG;
    return MPIUCC_OK;
}

static void grid_finish(ebq_grid *g) {
    g->es = mpiucc_dtype_size(g->dtype);
    g->inv_d = 1.0 / g->step;
    g->inv_f = g->inv_d > FLT_MAX ? FLT_MAX : (float)g->inv_d;
    /* |fl32(x - y)| <= tol_f implies |x - y| <= |fl32(x - y)| / (1 - 2^-24) <= eb. */
    double td = g->eb * (1.0 - 0x1p-22);
    g->tol_f = td > FLT_MAX ? FLT_MAX : td < FLT_MIN ? 0.0f : (float)td;
}

/* sqrt(mean(v^2)) over the finite v = src (+ residual), whose largest magnitude is top > 0:
 * summed as (v / top)^2 in double, in index order, so nothing overflows or underflows. */
static double finite_rms(mpiucc_dtype t, const void *src, const void *residual, size_t n,
                         double top) {
    double sum = 0.0;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        double v;
        if (t == MPIUCC_DTYPE_F32) {
            float f = ((const float *)src)[i];
            if (residual) f += ((const float *)residual)[i];
            v = f;
        } else {
            v = ((const double *)src)[i];
            if (residual) v += ((const double *)residual)[i];
        }
        if (!(fabs(v) <= DBL_MAX)) continue;
        v /= top;
        sum += v * v;
        count++;
    }
    return top * sqrt(sum / (double)count);
}

/* The finite minimum and maximum over threads: exact, so the order of the parts is free
 * (only the sign of a zero may differ, which no use of them sees). */
typedef struct {
    mpiucc_dtype t;
    const uint8_t *src, *residual;
    size_t n, es;
    int parts;
    double mn[MPIUCC_MAX_THREADS], mx[MPIUCC_MAX_THREADS];
    int any[MPIUCC_MAX_THREADS];
} minmax_job;

static void minmax_part(void *ctx, int t) {
    minmax_job *J = (minmax_job *)ctx;
    size_t i0 = J->n * (size_t)t / (size_t)J->parts, i1 = J->n * (size_t)(t + 1) / (size_t)J->parts;
    J->mn[t] = J->mx[t] = 0;
    J->any[t] = ebq_kernels_now()->minmax(J->t, J->src + i0 * J->es,
                                          J->residual ? J->residual + i0 * J->es : NULL,
                                          i1 - i0, &J->mn[t], &J->mx[t]);
}

static int finite_minmax(mpiucc_dtype t, const void *src, const void *residual, size_t n,
                         unsigned threads, double *mn, double *mx) {
    int parts = mpiucc_threads_for(threads, n);
    if (parts == 1) return n ? ebq_kernels_now()->minmax(t, src, residual, n, mn, mx) : 0;
    minmax_job J = {t, (const uint8_t *)src, (const uint8_t *)residual, n,
                    mpiucc_dtype_size(t), parts, {0}, {0}, {0}};
    mpiucc_parallel(parts, minmax_part, &J);
    int any = 0;
    for (int k = 0; k < parts; k++) {
        if (!J.any[k]) continue;
        if (!any || J.mn[k] < *mn) *mn = J.mn[k];
        if (!any || J.mx[k] > *mx) *mx = J.mx[k];
        any = 1;
    }
    return any;
}

void ebq_make_grid(const mpiucc_params *p, const void *src, const void *residual, size_t n,
                   ebq_grid *g) {
    g->dtype = (mpiucc_dtype)p->dtype;
    g->delta = p->predictor == MPIUCC_PREDICTOR_DELTA;
    double eb = p->error_bound;
    if (p->mode != MPIUCC_MODE_ABS) {
        double mn = 0, mx = 0;
        int any = finite_minmax(g->dtype, src, residual, n, p->threads, &mn, &mx);
        if (p->mode == MPIUCC_MODE_REL)
            eb *= any ? mx - mn : 0.0;
        else {
            double top = fmax(fabs(mn), fabs(mx));
            eb *= top > 0 ? finite_rms(g->dtype, src, residual, n, top) : 0.0;
        }
        if (!(eb > 0)) { /* constant data, nothing finite, or an underflow: exact values only */
            g->eb = 0.0;
            g->step = fabs(mn) > 0 ? fabs(mn) : 1.0;
            grid_finish(g);
            return;
        }
    }
    g->eb = eb < EBQ_MAX_EB ? eb : EBQ_MAX_EB;
    g->step = 2.0 * g->eb;
    grid_finish(g);
}

void ebq_grid_from_header(const mpiucc_header *h, ebq_grid *g) {
    g->dtype = (mpiucc_dtype)h->dtype;
    g->delta = ((h->aux >> 8) & 0xff) == MPIUCC_PREDICTOR_DELTA;
    g->step = h->param;
    g->eb = h->bound;
    grid_finish(g);
}

size_t ebq_nblocks(size_t n) { return n / EBQ_BLOCK + (n % EBQ_BLOCK != 0); }

/* ---- writing and reading payloads ---- */

mpiucc_status ebq_writer_init(ebq_writer *w, int dense, size_t n, size_t es, uint8_t *out,
                              size_t capacity) {
    memset(w, 0, sizeof *w);
    w->out = out;
    w->n = n;
    w->dense = dense;
    w->sink.lo = w->sink.top = out + capacity;
    w->sink.es = es;
    size_t head = dense ? (size_t)ebq_dense_head(2, n) : EBQ_SUBHEADER + ebq_nblocks(n);
    if (capacity < head) return MPIUCC_ERR_CAPACITY;
    w->widths = out + EBQ_SUBHEADER;
    w->start = w->op = out + head;
    w->sink.floor = w->op;
    if (dense) {
        w->sym = (uint8_t *)malloc(n ? n : 1);
        if (!w->sym) return MPIUCC_ERR_NOMEM;
    }
    return MPIUCC_OK;
}

void ebq_writer_free(ebq_writer *w) {
    free(w->sym);
    w->sym = NULL;
}

mpiucc_status ebq_writer_finish(ebq_writer *w, size_t *size) {
    if (w->sink.full) {
        ebq_writer_free(w);
        return MPIUCC_ERR_CAPACITY;
    }
    if (w->dense) {
        mpiucc_status st = ebq_dense_finish(w);
        ebq_writer_free(w);
        if (st != MPIUCC_OK) return st;
    } else {
        mpiucc_put_u64(w->out, w->sink.count);
        mpiucc_put_u64(w->out + 8, (uint64_t)(w->op - w->start));
    }
    w->op += ebq_sink_finish(&w->sink, w->op);
    *size = (size_t)(w->op - w->out);
    return MPIUCC_OK;
}

mpiucc_status ebq_reader_init(ebq_reader *r, const mpiucc_header *h, const uint8_t *payload,
                              uint8_t *scratch, size_t scratch_size, unsigned threads) {
    memset(r, 0, offsetof(ebq_reader, chunk)); /* not the chunk and decoder (48 KiB) */
    if ((h->aux & 0xff) == MPIUCC_LEVEL_DENSE)
        return ebq_dense_reader_init(r, h, payload, scratch, scratch_size, threads);
    size_t n = h->count, es = mpiucc_dtype_size((mpiucc_dtype)h->dtype), nb = ebq_nblocks(n);
    uint64_t ps = h->payload_size;
    if (ps < EBQ_SUBHEADER || ps - EBQ_SUBHEADER < nb) return MPIUCC_ERR_CORRUPT;
    uint64_t rest = ps - EBQ_SUBHEADER - nb;
    r->n = n;
    r->n_outliers = mpiucc_get_u64(payload);
    r->packed_size = mpiucc_get_u64(payload + 8);
    r->widths = payload + EBQ_SUBHEADER;
    r->packed = r->widths + nb;
    r->end = payload + ps;
    if (r->packed_size > rest || r->n_outliers > n ||
        r->n_outliers > (rest - r->packed_size) / (es + 1))
        return MPIUCC_ERR_CORRUPT;
    r->outliers = r->packed + r->packed_size;
    mpiucc_status st = ebq_check_stream(r->widths, nb, r->packed, r->packed_size, n);
    if (st != MPIUCC_OK) return st;
    return ebq_check_outliers(r->outliers, r->end, r->n_outliers, n, es);
}

/* ---- the codec ---- */

static size_t ebq_payload_bound(const mpiucc_params *p, size_t n) {
    size_t es = mpiucc_dtype_size((mpiucc_dtype)p->dtype);
    if (n > (SIZE_MAX >> 8)) return 0;
    size_t outl = n * (es + 1) + n / 128 + 1; /* outlier records (varint gaps: n/128 extra) */
    if (p->level == MPIUCC_LEVEL_DENSE) return ebq_dense_payload_bound(n, es) + outl;
    return EBQ_SUBHEADER + ebq_nblocks(n) * (1 + 4 * EBQ_ENCODE_MAX_WIDTH) + outl;
}

/* Quantize elements [i0, i1) into w (prev: the index before i0). */
static void encode_range(const ebq_grid *g, const void *src, void *residual, size_t i0,
                         size_t i1, int32_t prev, ebq_writer *w) {
    const ebq_kernels *k = ebq_kernels_now();
    uint32_t z[EBQ_CHUNK], ors[EBQ_CHUNK / EBQ_BLOCK];
    for (; i0 < i1; i0 += EBQ_CHUNK) {
        size_t m = i1 - i0 < EBQ_CHUNK ? i1 - i0 : EBQ_CHUNK;
        k->quantize(g, src, residual, i0, m, &prev, z, ors, NULL, &w->sink);
        for (size_t b = 0; b * EBQ_BLOCK < m; b++) {
            if (!ebq_writer_put(w, z + b * EBQ_BLOCK, ors[b])) w->sink.full = 1;
        }
        if (w->sink.full) break;
    }
}

/* The index of element i of src (+ residual) as the kernels decide it (0 for an outlier). */
static int32_t index_at(const ebq_grid *g, const void *src, const void *residual, size_t i) {
    int32_t q;
    if (g->dtype == MPIUCC_DTYPE_F32) {
        float v = ((const float *)src)[i], y;
        if (residual) v += ((const float *)residual)[i];
        ebq_decide_f32(g, v, &q, &y);
    } else {
        double v = ((const double *)src)[i], y;
        if (residual) v += ((const double *)residual)[i];
        ebq_decide_f64(g, v, &q, &y);
    }
    return q;
}

typedef struct {
    ebq_segs segs;
    const ebq_grid *g;
    const void *src;
    void *residual;
} encode_job;

static void encode_segment(void *ctx, int t) {
    encode_job *J = (encode_job *)ctx;
    ebq_seg *s = &J->segs.seg[t];
    encode_range(J->g, J->src, J->residual, s->i0, s->i1, s->prev, s->w);
}

mpiucc_status ebq_encode_threads(const ebq_grid *g, const void *src, void *residual, size_t n,
                                 ebq_writer *w, int threads, size_t *size) {
    encode_job J;
    J.g = g;
    J.src = src;
    J.residual = residual;
    if (!ebq_segs_open(&J.segs, w, n, threads, EBQ_ENCODE_MAX_WIDTH)) return MPIUCC_ERR_NOMEM;
    /* Before any thread writes a residual: the indices the DELTA predictor starts from. */
    for (int t = 0; t < threads; t++)
        J.segs.seg[t].prev = g->delta && t ? index_at(g, src, residual, J.segs.seg[t].i0 - 1) : 0;
    mpiucc_parallel(threads, encode_segment, &J);
    mpiucc_status st = ebq_segs_merge(&J.segs, n, size);
    ebq_segs_close(&J.segs);
    return st;
}

static mpiucc_status ebq_encode(const mpiucc_params *p, const void *src, void *residual,
                                size_t n, uint8_t *out, size_t capacity, size_t *size,
                                mpiucc_header *h) {
    /* With error feedback a failure half-way would leave the residual half-updated. */
    if (residual && capacity < ebq_payload_bound(p, n)) return MPIUCC_ERR_CAPACITY;
    ebq_grid g;
    ebq_make_grid(p, src, residual, n, &g);
    h->bound = g.eb;
    h->param = g.step;
    h->block = EBQ_BLOCK;
    h->aux = p->level | p->predictor << 8;
    if (p->level == MPIUCC_LEVEL_DENSE) h->version = 3; /* segments, wide symbols */
    ebq_writer w;
    mpiucc_status st = ebq_writer_init(&w, p->level == MPIUCC_LEVEL_DENSE, n, g.es, out, capacity);
    if (st != MPIUCC_OK) return st;
    w.threads = p->threads;
    int threads = mpiucc_threads_for(p->threads, n);
    if (threads > 1) {
        st = ebq_encode_threads(&g, src, residual, n, &w, threads, size);
        if (st != MPIUCC_ERR_NOMEM) {
            ebq_writer_free(&w);
            if (w.sink.nonfinite) h->flags |= MPIUCC_FLAG_NONFINITE;
            return st;
        }
    }
    encode_range(&g, src, residual, 0, n, 0, &w);
    if (w.sink.nonfinite) h->flags |= MPIUCC_FLAG_NONFINITE;
    return ebq_writer_finish(&w, size);
}

static mpiucc_status ebq_check_header(const mpiucc_header *h) {
    if (h->dtype != MPIUCC_DTYPE_F32 && h->dtype != MPIUCC_DTYPE_F64)
        return MPIUCC_ERR_UNSUPPORTED;
    unsigned level = h->aux & 0xff, pred = (h->aux >> 8) & 0xff;
    if (h->block != EBQ_BLOCK || (h->aux >> 16) || level > MPIUCC_LEVEL_DENSE ||
        pred > MPIUCC_PREDICTOR_DELTA || !(h->param > 0) || !(h->param <= DBL_MAX))
        return MPIUCC_ERR_CORRUPT;
    if (h->version >= 2 && level != MPIUCC_LEVEL_DENSE) return MPIUCC_ERR_CORRUPT;
    uint64_t head =
        level ? ebq_dense_head(h->version, h->count) : EBQ_SUBHEADER + ebq_nblocks(h->count);
    if (h->payload_size < head) return MPIUCC_ERR_CORRUPT;
    return MPIUCC_OK;
}

/* dst[pos] = value (or += value) for every outlier record. */
static void patch_outliers(const ebq_grid *g, const uint8_t *rec, uint64_t k, void *dst,
                           int add) {
    uint64_t pos = 0;
    for (uint64_t j = 0; j < k; j++, pos++) {
        if (g->dtype == MPIUCC_DTYPE_F32) {
            float v, *d;
            rec = ebq_read_outlier(rec, &pos, 4, &v);
            d = (float *)dst + pos;
            *d = add ? *d + v : v;
        } else {
            double v, *d;
            rec = ebq_read_outlier(rec, &pos, 8, &v);
            d = (double *)dst + pos;
            *d = add ? *d + v : v;
        }
    }
}

typedef struct {
    ebq_segs segs;
    const ebq_grid *g;
    const uint8_t *widths, *end;
    const uint8_t *packed[MPIUCC_MAX_THREADS]; /* each segment's first packed block */
    uint8_t *dst;
    int add;
} decode_job;

static void decode_segment(void *ctx, int t) {
    decode_job *J = (decode_job *)ctx;
    ebq_seg *s = &J->segs.seg[t];
    ebq_kernels_now()->decode(J->g, J->widths + s->i0 / EBQ_BLOCK, J->packed[t], J->end,
                              s->i1 - s->i0, J->dst + s->i0 * J->g->es, J->add);
}

/* The fast blocks of a validated payload without predictor, over threads. */
static void decode_fast_threads(const ebq_grid *g, const ebq_reader *r, size_t n, void *dst,
                                int add, int threads) {
    decode_job J = {.g = g, .widths = r->widths, .end = r->end, .dst = (uint8_t *)dst,
                    .add = add};
    ebq_segs_bounds(&J.segs, n, threads);
    const uint8_t *p = r->packed;
    for (int t = 0, b = 0; t < threads; t++) {
        for (size_t b1 = J.segs.seg[t].i0 / EBQ_BLOCK; (size_t)b < b1; b++) p += 4u * r->widths[b];
        J.packed[t] = p;
    }
    mpiucc_parallel(threads, decode_segment, &J);
}

/* The dense blocks of a payload read in one pass (symbols in the scratch), over the reader's
 * parts: each thread reads its part's blocks from its own copy of the reader. */
typedef struct {
    const ebq_grid *g;
    const ebq_reader *r;
    uint8_t *dst;
    int add;
} dense_job;

static void dense_part(void *ctx, int t) {
    dense_job *J = (dense_job *)ctx;
    ebq_reader r; /* everything but the chunk and decoder, which one pass does not use */
    memcpy(&r, J->r, offsetof(ebq_reader, chunk));
    size_t i1 = ebq_part_start(r.n, r.parts, t + 1);
    r.esc = r.esc_at[t];
    r.b = ebq_part_start(r.n, r.parts, t) / EBQ_BLOCK;
    const ebq_kernels *k = ebq_kernels_now();
    uint32_t z[EBQ_BLOCK];
    int32_t prev = 0;
    for (size_t i0 = r.b * EBQ_BLOCK; i0 < i1; i0 += EBQ_BLOCK) {
        size_t m = i1 - i0 < EBQ_BLOCK ? i1 - i0 : EBQ_BLOCK;
        ebq_reader_block(&r, z);
        k->dequant(J->g, z, m, &prev, J->dst + i0 * J->g->es, J->add);
    }
}

mpiucc_status ebq_decode_threads(const mpiucc_header *h, const uint8_t *payload, void *dst,
                                 int add, uint8_t *scratch, size_t scratch_size,
                                 unsigned threads) {
    ebq_reader r; /* everything is validated before any write */
    mpiucc_status st = ebq_reader_init(&r, h, payload, scratch, scratch_size, threads);
    if (st != MPIUCC_OK) return st;
    ebq_grid g;
    ebq_grid_from_header(h, &g);
    int nt = r.dense || g.delta ? 1 : mpiucc_threads_for(threads, h->count);
    if (nt > 1) {
        decode_fast_threads(&g, &r, h->count, dst, add, nt);
    } else if (r.dense && r.sym && r.parts > 1) {
        dense_job J = {&g, &r, (uint8_t *)dst, add};
        mpiucc_parallel(r.parts, dense_part, &J);
    } else if (!r.dense) {
        ebq_kernels_now()->decode(&g, r.widths, r.packed, r.end, h->count, dst, add);
    } else {
        const ebq_kernels *k = ebq_kernels_now();
        uint32_t z[EBQ_BLOCK];
        int32_t prev = 0;
        for (size_t i0 = 0; i0 < h->count; i0 += EBQ_BLOCK) {
            size_t m = h->count - i0 < EBQ_BLOCK ? h->count - i0 : EBQ_BLOCK;
            ebq_reader_block(&r, z);
            k->dequant(&g, z, m, &prev, (uint8_t *)dst + i0 * g.es, add);
        }
    }
    patch_outliers(&g, r.outliers, r.n_outliers, dst, add);
    return MPIUCC_OK;
}

static mpiucc_status ebq_decode_scratch(const mpiucc_header *h, const uint8_t *payload,
                                        void *dst, int add, uint8_t *scratch,
                                        size_t scratch_size) {
    return ebq_decode_threads(h, payload, dst, add, scratch, scratch_size, 0);
}

static mpiucc_status ebq_decode(const mpiucc_header *h, const uint8_t *payload, void *dst,
                                int add) {
    return ebq_decode_threads(h, payload, dst, add, NULL, 0, 0);
}

static size_t ebq_scratch_size(const mpiucc_header *h) {
    return (h->aux & 0xff) == MPIUCC_LEVEL_DENSE ? (size_t)h->count : 0;
}

const mpiucc_codec_impl mpiucc_ebq_impl = {ebq_payload_bound, ebq_check_params, ebq_encode,
                                           ebq_check_header,  ebq_decode,       ebq_scratch_size,
                                           ebq_decode_scratch};

/* ---- the integer domain: quantize only ---- */

mpiucc_status mpiucc_ebq_quantize(const mpiucc_params *params, const void *src, size_t count,
                                  int32_t *indices, uint64_t *outlier_pos,
                                  size_t outlier_capacity, size_t *n_outliers) {
    if (!params || !n_outliers || (count && (!src || !indices)) ||
        (outlier_capacity && !outlier_pos) || params->codec != MPIUCC_CODEC_EBQ ||
        params->mode != MPIUCC_MODE_ABS)
        return MPIUCC_ERR_ARG;
    for (int i = 0; i < 6; i++)
        if (params->reserved[i]) return MPIUCC_ERR_ARG;
    mpiucc_params p = *params; /* level and predictor play no part here */
    p.level = MPIUCC_LEVEL_FAST;
    p.predictor = MPIUCC_PREDICTOR_NONE;
    mpiucc_status st = ebq_check_params(&p);
    if (st != MPIUCC_OK) return st;
    ebq_grid g;
    ebq_make_grid(&p, src, NULL, count, &g);
    uint64_t dummy;
    ebq_sink sink = {NULL, NULL, NULL, outlier_pos ? outlier_pos : &dummy, outlier_capacity,
                     g.es, 0, 0, 0, 0};
    const ebq_kernels *k = ebq_kernels_now();
    uint32_t z[EBQ_CHUNK], ors[EBQ_CHUNK / EBQ_BLOCK];
    int32_t prev = 0;
    for (size_t i0 = 0; i0 < count; i0 += EBQ_CHUNK) {
        size_t m = count - i0 < EBQ_CHUNK ? count - i0 : EBQ_CHUNK;
        k->quantize(&g, src, NULL, i0, m, &prev, z, ors, indices + i0, &sink);
    }
    *n_outliers = (size_t)sink.count;
    return sink.count > outlier_capacity ? MPIUCC_ERR_CAPACITY : MPIUCC_OK;
}
