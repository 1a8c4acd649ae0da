/* ebq_segments.c: one ebq payload written by several threads. The elements are cut into
 * segments of whole kernel chunks; segment 0 writes into the payload itself (as a single
 * pass would), every other segment into a buffer of its own (fast: its width bytes go straight
 * to their place, its packed blocks to the buffer, or, where the payload has room for every
 * segment's widest blocks, to an area of the payload after the areas before it; dense: its
 * symbols straight to the shared symbol buffer, its escapes to the buffer; outliers staged at
 * the buffer's top). The merge moves the segments' blocks down after segment 0's in order and
 * re-codes the first outlier gap of each, so the payload is byte for byte the one a single
 * pass writes, whatever the number of segments. (Fresh buffers would cost the second thread a
 * page fault per 4 KiB it writes: more than its share of a fast compress.) */
#include <stdlib.h>

#include "ebq_segments.h"

size_t ebq_part_start(size_t n, int parts, int t) {
    size_t i = (n + EBQ_CHUNK - 1) / EBQ_CHUNK * (size_t)t / (size_t)parts * EBQ_CHUNK;
    return i < n ? i : n;
}

void ebq_segs_bounds(ebq_segs *S, size_t n, int count) {
    S->count = count;
    for (int t = 0; t <= count; t++) S->seg[t].i0 = ebq_part_start(n, count, t);
    for (int t = 0; t < count; t++) S->seg[t].i1 = S->seg[t + 1].i0;
}

/* Bytes of the widest blocks of segment t. */
static size_t widest(const ebq_segs *S, int t, unsigned max_width) {
    return ebq_nblocks(S->seg[t].i1 - S->seg[t].i0) * 4 * max_width;
}

int ebq_segs_open(ebq_segs *S, ebq_writer *w0, size_t n, int count, unsigned max_width) {
    ebq_segs_bounds(S, n, count);
    S->w0 = w0;
    S->seg[0].w = w0;
    size_t es = w0->sink.es, areas = 0, room = (size_t)(w0->sink.top - w0->start);
    for (int t = 0; t < count && max_width && !w0->dense; t++) areas += widest(S, t, max_width);
    int in_place = areas && room >= areas && room - areas >= n * (es + 1) + n / 128 + 1;
    uint8_t *at = w0->start;
    const uint8_t *floor = w0->sink.floor;
    if (in_place) {
        w0->end = at += widest(S, 0, max_width);
        w0->sink.floor = w0->start + areas; /* segment 0's outliers above every area */
    }
    w0->n = S->seg[0].i1; /* the dense writer counts its blocks within the segment */
    for (int t = 1; t < count; t++) {
        ebq_seg *s = &S->seg[t];
        size_t m = s->i1 - s->i0;
        size_t body = in_place ? 0
                      : w0->dense ? 5 * m
                                  : ebq_nblocks(m) * 4 * EBQ_ENCODE_MAX_WIDTH_ADD;
        size_t cap = body + m * (es + 1) + m / 128 + 16;
        s->tmp = (uint8_t *)malloc(cap);
        if (!s->tmp) {
            ebq_segs_close(S);
            w0->n = n;
            w0->end = NULL;
            w0->sink.floor = floor;
            return 0;
        }
        ebq_writer *w = &s->own;
        memset(w, 0, sizeof *w);
        w->dense = w0->dense;
        w->n = m;
        w->widths = w0->widths + s->i0 / EBQ_BLOCK;
        w->sym = w0->dense ? w0->sym + s->i0 : NULL;
        w->start = w->op = in_place ? at : s->tmp;
        if (in_place) w->end = at += widest(S, t, max_width);
        w->sink.lo = w->sink.top = s->tmp + cap;
        w->sink.floor = s->tmp;
        w->sink.es = es;
        w->sink.next = s->i0; /* gaps from the segment's start; the merge re-codes the first */
        s->w = w;
    }
    return 1;
}

void ebq_segs_close(ebq_segs *S) {
    for (int t = 1; t < S->count; t++) {
        free(S->seg[t].tmp);
        S->seg[t].tmp = NULL;
    }
}

static uint8_t *put_varint(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

mpiucc_status ebq_segs_merge(ebq_segs *S, size_t n, size_t *size) {
    ebq_writer *w0 = S->w0;
    uint8_t *end = w0->sink.top;
    uint64_t outliers = 0;
    mpiucc_status st = MPIUCC_OK;
    for (int t = 0; t < S->count; t++) {
        ebq_writer *w = S->seg[t].w;
        if (w->sink.full) st = MPIUCC_ERR_CAPACITY;
        outliers += w->sink.count;
        w0->sink.nonfinite |= w->sink.nonfinite;
    }
    for (int t = 1; t < S->count && st == MPIUCC_OK; t++) { /* packed blocks or escapes */
        ebq_writer *w = S->seg[t].w;
        size_t len = (size_t)(w->op - w->start);
        if ((size_t)(w0->sink.lo - w0->op) < len) {
            st = MPIUCC_ERR_CAPACITY;
            break;
        }
        memmove(w0->op, w->start, len); /* in place: down, maybe onto itself */
        w0->op += len;
    }
    w0->n = n;
    w0->end = NULL;
    w0->sink.floor = w0->op;
    uint64_t own = w0->sink.count;
    w0->sink.count = outliers;
    if (st == MPIUCC_OK && w0->dense) st = ebq_dense_finish(w0);
    if (st == MPIUCC_OK && !w0->dense) {
        mpiucc_put_u64(w0->out, outliers);
        mpiucc_put_u64(w0->out + 8, (uint64_t)(w0->op - w0->start));
    }
    if (st != MPIUCC_OK) return st;
    w0->op += ebq_sink_finish(&w0->sink, w0->op);
    uint64_t next = own ? w0->sink.next : 0;
    for (int t = 1; t < S->count; t++) {
        ebq_seg *s = &S->seg[t];
        if (!s->w->sink.count) continue;
        size_t f = ebq_sink_finish(&s->w->sink, s->tmp);
        uint64_t gap = 0, pos;
        size_t k = 0; /* the first gap, from the segment's start */
        do {
            gap |= (uint64_t)(s->tmp[k] & 0x7f) << (7 * k);
        } while (s->tmp[k++] & 0x80);
        pos = s->i0 + gap;
        if ((size_t)(end - w0->op) < ebq_varint_size(pos - next) + f - k)
            return MPIUCC_ERR_CAPACITY;
        w0->op = put_varint(w0->op, pos - next);
        memcpy(w0->op, s->tmp + k, f - k);
        w0->op += f - k;
        next = s->w->sink.next;
    }
    *size = (size_t)(w0->op - w0->out);
    return MPIUCC_OK;
}
