/* ebq_dense.c: the dense level of ebq. The same indices as the fast level (same quantize
 * kernel, same predictor, same zigzag values z), coded as byte symbols min(z, 255) through
 * the rANS stage of entropy.h; z >= 255 also writes the varint z - 255 ("escape").
 * Payload: sub-header (outlier count, escape size, rANS size; u64 each), escapes, rANS
 * stream, outlier records (as the fast level). Encoding allocates one scratch buffer of
 * count bytes (the symbols) per call; decoding allocates nothing: it validates the whole
 * stream chunk by chunk first, then decodes it again as the blocks are read. */
#include <stdlib.h>

#include "ebq.h"

#define ESC 255u
#define ESC_MAX_BYTES 5 /* varint of a value below 2^32 */

size_t ebq_dense_payload_bound(size_t n, size_t es) {
    (void)es;
    size_t r = mpiucc_rans_bound(n);
    return r > SIZE_MAX / 2 - ESC_MAX_BYTES * n ? 0 : EBQ_DENSE_SUBHEADER + ESC_MAX_BYTES * n + r;
}

int ebq_dense_put(ebq_writer *w, const uint32_t *z, uint32_t orv) {
    size_t i0 = w->nb * EBQ_BLOCK, m = w->n - i0 < EBQ_BLOCK ? w->n - i0 : EBQ_BLOCK;
    uint8_t *sym = w->sym + i0;
    if (orv < ESC) {
        for (size_t i = 0; i < m; i++) sym[i] = (uint8_t)z[i];
    } else {
        for (size_t i = 0; i < m; i++) {
            if (z[i] < ESC) {
                sym[i] = (uint8_t)z[i];
                continue;
            }
            sym[i] = ESC;
            uint32_t v = z[i] - ESC;
            if ((size_t)(w->sink.lo - w->op) < ebq_varint_size(v)) return 0;
            while (v >= 0x80) {
                *w->op++ = (uint8_t)(v | 0x80);
                v >>= 7;
            }
            *w->op++ = (uint8_t)v;
        }
    }
    w->nb++;
    w->sink.floor = w->op;
    return 1;
}

mpiucc_status ebq_dense_finish(ebq_writer *w) {
    size_t esc = (size_t)(w->op - w->start), rsize = 0;
    mpiucc_status st =
        mpiucc_rans_encode(w->sym, w->n, w->op, (size_t)(w->sink.lo - w->op), &rsize);
    if (st != MPIUCC_OK) return st == MPIUCC_ERR_ARG ? st : MPIUCC_ERR_CAPACITY;
    w->op += rsize;
    mpiucc_put_u64(w->out, w->sink.count);
    mpiucc_put_u64(w->out + 8, esc);
    mpiucc_put_u64(w->out + 16, rsize);
    return MPIUCC_OK;
}

/* One escape varint at *p (< end): canonical, below 2^32 - ESC. 0 when invalid. */
static int read_escape(const uint8_t **p, const uint8_t *end, uint32_t *v) {
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 35; shift += 7) {
        if (*p >= end) return 0;
        uint8_t c = *(*p)++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            if ((!c && shift) || x > UINT32_MAX - ESC) return 0;
            *v = (uint32_t)x;
            return 1;
        }
    }
    return 0;
}

/* The symbols of elements [i0, i0 + m) into r->chunk (m <= EBQ_DENSE_CHUNK). */
static mpiucc_status next_chunk(ebq_reader *r, size_t i0, size_t m) {
    r->chunk_end = i0 + m;
    return mpiucc_rans_decoder_next(&r->dec, r->chunk, m);
}

mpiucc_status ebq_dense_reader_init(ebq_reader *r, const mpiucc_header *h,
                                    const uint8_t *payload, uint8_t *scratch,
                                    size_t scratch_size) {
    size_t n = h->count, es = mpiucc_dtype_size((mpiucc_dtype)h->dtype);
    uint64_t ps = h->payload_size;
    if (ps < EBQ_DENSE_SUBHEADER) return MPIUCC_ERR_CORRUPT;
    uint64_t rest = ps - EBQ_DENSE_SUBHEADER, esize = mpiucc_get_u64(payload + 8),
             rsize = mpiucc_get_u64(payload + 16);
    r->dense = 1;
    r->n = n;
    r->n_outliers = mpiucc_get_u64(payload);
    if (esize > rest || rsize > rest - esize || r->n_outliers > n ||
        r->n_outliers > (rest - esize - rsize) / (es + 1))
        return MPIUCC_ERR_CORRUPT;
    r->esc = payload + EBQ_DENSE_SUBHEADER;
    const uint8_t *rans = r->esc + esize;
    r->outliers = rans + rsize;
    r->end = payload + ps;
    mpiucc_status st = ebq_check_outliers(r->outliers, r->end, r->n_outliers, n, es);
    if (st != MPIUCC_OK) return st;
    const uint8_t *p = r->esc;
    if (scratch && scratch_size >= n) { /* one pass: every symbol into the caller's scratch */
        if (mpiucc_rans_decode(rans, (size_t)rsize, scratch, n) != MPIUCC_OK)
            return MPIUCC_ERR_CORRUPT;
        for (const uint8_t *s = scratch; n && (s = memchr(s, ESC, (size_t)(scratch + n - s)));
             s++) {
            uint32_t v;
            if (!read_escape(&p, rans, &v)) return MPIUCC_ERR_CORRUPT;
        }
        r->sym = scratch;
        return p == rans ? MPIUCC_OK : MPIUCC_ERR_CORRUPT;
    }
    /* Pass 1: the whole rANS stream and every escape, so that nothing is written on error. */
    if (mpiucc_rans_decoder_init(&r->dec, rans, (size_t)rsize, n) != MPIUCC_OK)
        return MPIUCC_ERR_CORRUPT;
    for (size_t i0 = 0; i0 < n; i0 += EBQ_DENSE_CHUNK) {
        size_t m = n - i0 < EBQ_DENSE_CHUNK ? n - i0 : EBQ_DENSE_CHUNK;
        if (next_chunk(r, i0, m) != MPIUCC_OK) return MPIUCC_ERR_CORRUPT;
        for (const uint8_t *s = r->chunk; (s = memchr(s, ESC, (size_t)(r->chunk + m - s)));
             s++) {
            uint32_t v;
            if (!read_escape(&p, rans, &v)) return MPIUCC_ERR_CORRUPT;
        }
    }
    if (mpiucc_rans_decoder_finish(&r->dec) != MPIUCC_OK || p != rans) return MPIUCC_ERR_CORRUPT;
    /* Pass 2 decodes the same stream again, block by block. */
    r->chunk_end = 0;
    return mpiucc_rans_decoder_init(&r->dec, rans, (size_t)rsize, n);
}

void ebq_dense_block(ebq_reader *r, uint32_t *z) {
    size_t i0 = r->b * EBQ_BLOCK, m = r->n - i0 < EBQ_BLOCK ? r->n - i0 : EBQ_BLOCK;
    const uint8_t *sym;
    if (r->sym) {
        sym = r->sym + i0;
    } else {
        if (i0 >= r->chunk_end) /* validated by the reader's init: cannot fail */
            next_chunk(r, i0, r->n - i0 < EBQ_DENSE_CHUNK ? r->n - i0 : EBQ_DENSE_CHUNK);
        sym = r->chunk + (i0 % EBQ_DENSE_CHUNK);
    }
    for (size_t i = 0; i < m; i++) {
        z[i] = sym[i];
        if (sym[i] == ESC) {
            uint32_t v = 0;
            read_escape(&r->esc, r->outliers, &v); /* validated by the reader's init */
            z[i] = ESC + v;
        }
    }
    for (size_t i = m; i < EBQ_BLOCK; i++) z[i] = 0;
}
