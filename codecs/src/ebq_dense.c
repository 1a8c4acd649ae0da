/* ebq_dense.c: the dense level of ebq. The same indices as the fast level (same quantize
 * kernel, same predictor, same zigzag values z), coded as byte symbols through the rANS stage
 * of entropy.h. Format v3 (written today): z < 128 is its own symbol; a larger z is the symbol
 * of its bit length and the two bits below its top bit, and its remaining low bits go raw to a
 * bit stream ("extra bits", byte-aligned at the end of every kernel chunk). v1 and v2: symbols
 * min(z, 255), and z >= 255 also writes the varint z - 255 ("escape").
 * Payload v1: sub-header (outlier count, escape size, rANS size; u64 each), escapes, rANS
 * stream, outlier records (as the fast level). Payload v2 and v3: outlier count, escape (v3:
 * extra bits) size, then the size of each segment's rANS stream (segments of EBQ_DENSE_SEGMENT
 * symbols), escapes (extra bits), the streams in order, outlier records. Encoding allocates the
 * symbols (count bytes) and, on threads, a buffer per stream; decoding allocates nothing: it
 * validates the whole stream chunk by chunk first, then decodes it again as the blocks are
 * read. */
#include <stdlib.h>

#include "ebq.h"
#include "threads.h"

#define ESC 255u
#define ESC_MAX_BYTES 5 /* varint of a value below 2^32; v3's extra bits take less */
#define LIT 128u        /* v3: symbols below are z itself */
#define SYM_END 228u    /* v3: symbols LIT..227 are (bit length 8..32) x (two bits below the top) */
#define CHUNK_BLOCKS (EBQ_CHUNK / EBQ_BLOCK) /* v3: the extra bits end on a byte every chunk */

/* v3: raw low bits of a symbol >= LIT. */
static inline unsigned wide_bits(unsigned sym) { return 5 + ((sym - LIT) >> 2); }

static size_t segments_of(uint64_t n) {
    return (size_t)(n / EBQ_DENSE_SEGMENT + (n % EBQ_DENSE_SEGMENT != 0));
}

uint64_t ebq_dense_head(uint32_t version, uint64_t n) {
    return version == 1 ? EBQ_DENSE_SUBHEADER : 16 + 8 * (uint64_t)segments_of(n);
}

size_t ebq_dense_payload_bound(size_t n, size_t es) {
    (void)es;
    size_t r = mpiucc_rans_bound(n) + segments_of(n); /* rans_bound(m) = m + 1 per stream */
    return r > SIZE_MAX / 2 - ESC_MAX_BYTES * n
               ? 0
               : (size_t)ebq_dense_head(2, n) + ESC_MAX_BYTES * n + r;
}

int ebq_dense_put(ebq_writer *w, const uint32_t *z, uint32_t orv) {
    size_t i0 = w->nb * EBQ_BLOCK, m = w->n - i0 < EBQ_BLOCK ? w->n - i0 : EBQ_BLOCK;
    uint8_t *sym = w->sym + i0;
    if (orv < LIT) {
        for (size_t i = 0; i < m; i++) sym[i] = (uint8_t)z[i];
    } else {
        unsigned nb[EBQ_BLOCK];
        uint32_t low[EBQ_BLOCK];
        size_t bits = w->nbits;
        for (size_t i = 0; i < m; i++) { /* branch-free: a literal takes no extra bits */
            uint32_t v = z[i], wide = 0u - (uint32_t)(v >= LIT); /* all ones when wide */
            unsigned b = ebq_width(v | 1), k = (b - 3) & wide;
            uint32_t ws = LIT + 4 * (b - 8) + ((v >> k) & 3);
            sym[i] = (uint8_t)(v ^ ((v ^ ws) & wide));
            nb[i] = k;
            low[i] = v & ((1u << k) - 1);
            bits += k;
        }
        if ((size_t)(w->sink.lo - w->op) < (bits + 7) / 8) return 0;
        uint64_t acc = w->acc;
        unsigned n = w->nbits; /* below 32 between values: 32 + 29 bits fit the accumulator */
        uint8_t *op = w->op;   /* a local: byte stores could alias the writer */
        for (size_t i = 0; i < m; i++) {
            acc |= (uint64_t)low[i] << n;
            n += nb[i];
            if (n >= 32) {
                mpiucc_put_u32(op, (uint32_t)acc);
                op += 4;
                acc >>= 32;
                n -= 32;
            }
        }
        w->op = op;
        w->acc = acc;
        w->nbits = n;
    }
    w->nb++;
    if (w->nbits && (w->nb % CHUNK_BLOCKS == 0 || w->nb * EBQ_BLOCK >= w->n)) {
        for (; w->nbits; w->nbits = w->nbits > 8 ? w->nbits - 8 : 0, w->acc >>= 8)
            *w->op++ = (uint8_t)w->acc; /* the chunk's last bytes, zero-padded */
        w->acc = 0;
    }
    w->sink.floor = w->op + (w->nbits + 7) / 8; /* bytes still in the accumulator */
    return 1;
}

/* The rANS streams of the segments, each into a buffer of its own, on threads. */
typedef struct {
    const uint8_t *sym;
    size_t n, nseg;
    uint8_t **buf;
    size_t *size;
    mpiucc_status *st;
    int threads;
} streams_job;

static void encode_streams(void *ctx, int t) {
    streams_job *J = (streams_job *)ctx;
    for (size_t s = J->nseg * (size_t)t / (size_t)J->threads;
         s < J->nseg * (size_t)(t + 1) / (size_t)J->threads; s++) {
        size_t i0 = s * EBQ_DENSE_SEGMENT, m = J->n - i0 < EBQ_DENSE_SEGMENT ? J->n - i0
                                                                          : EBQ_DENSE_SEGMENT;
        J->st[s] = mpiucc_rans_encode(J->sym + i0, m, J->buf[s], mpiucc_rans_bound(m), &J->size[s]);
    }
}

static mpiucc_status finish_threads(ebq_writer *w, size_t nseg, int threads) {
    streams_job J = {w->sym, w->n, nseg, NULL, NULL, NULL, threads};
    J.buf = (uint8_t **)calloc(nseg, sizeof *J.buf);
    J.size = (size_t *)calloc(nseg, sizeof *J.size);
    J.st = (mpiucc_status *)calloc(nseg, sizeof *J.st);
    mpiucc_status st = J.buf && J.size && J.st ? MPIUCC_OK : MPIUCC_ERR_NOMEM;
    for (size_t s = 0; s < nseg && st == MPIUCC_OK; s++)
        if (!(J.buf[s] = (uint8_t *)malloc(mpiucc_rans_bound(EBQ_DENSE_SEGMENT)))) st = MPIUCC_ERR_NOMEM;
    if (st == MPIUCC_OK) mpiucc_parallel(threads, encode_streams, &J);
    for (size_t s = 0; s < nseg && st == MPIUCC_OK; s++) {
        st = J.st[s];
        if (st == MPIUCC_OK && (size_t)(w->sink.lo - w->op) < J.size[s]) st = MPIUCC_ERR_CAPACITY;
        if (st != MPIUCC_OK) break;
        memcpy(w->op, J.buf[s], J.size[s]);
        w->op += J.size[s];
        mpiucc_put_u64(w->out + 16 + 8 * s, J.size[s]);
    }
    for (size_t s = 0; J.buf && s < nseg; s++) free(J.buf[s]);
    free(J.buf);
    free(J.size);
    free(J.st);
    return st;
}

mpiucc_status ebq_dense_finish(ebq_writer *w) {
    size_t esc = (size_t)(w->op - w->start), nseg = segments_of(w->n);
    int threads = mpiucc_threads_for(w->threads, w->n);
    if ((size_t)threads > nseg) threads = (int)nseg;
    mpiucc_status st = threads > 1 ? finish_threads(w, nseg, threads) : MPIUCC_ERR_NOMEM;
    if (st == MPIUCC_ERR_NOMEM) {
        st = MPIUCC_OK;
        for (size_t s = 0; s < nseg && st == MPIUCC_OK; s++) {
            size_t i0 = s * EBQ_DENSE_SEGMENT, rsize = 0;
            size_t m = w->n - i0 < EBQ_DENSE_SEGMENT ? w->n - i0 : EBQ_DENSE_SEGMENT;
            st = mpiucc_rans_encode(w->sym + i0, m, w->op, (size_t)(w->sink.lo - w->op), &rsize);
            w->op += rsize;
            mpiucc_put_u64(w->out + 16 + 8 * s, rsize);
        }
    }
    if (st != MPIUCC_OK) return st == MPIUCC_ERR_ARG ? st : MPIUCC_ERR_CAPACITY;
    mpiucc_put_u64(w->out, w->sink.count);
    mpiucc_put_u64(w->out + 8, esc);
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

/* v3: validate the extra bits of one kernel chunk's m symbols at *p (< end) and step over
 * them: every symbol below SYM_END, the bytes there, the last one's padding zero. */
static int check_bits(const uint8_t *sym, size_t m, const uint8_t **p, const uint8_t *end) {
    uint64_t any = 0;
    size_t i = 0;
    for (; i + 8 <= m; i += 8) {
        uint64_t v;
        memcpy(&v, sym + i, 8);
        any |= v;
    }
    for (; i < m; i++) any |= sym[i];
    if (!(any & 0x8080808080808080ull)) return 1;
    size_t bits = 0;
    unsigned bad = 0;
    for (i = 0; i < m; i++) { /* without a branch on the symbol's kind */
        unsigned s = sym[i];
        bits += s >= LIT ? wide_bits(s) : 0;
        bad |= s >= SYM_END;
    }
    if (bad) return 0;
    size_t bytes = (bits + 7) / 8;
    if ((size_t)(end - *p) < bytes) return 0;
    if (bits % 8 && ((*p)[bytes - 1] >> (bits % 8))) return 0;
    *p += bytes;
    return 1;
}

/* The escapes (v1, v2) or extra bits (v3) of symbols [i0, i0 + m) (v3: i0 and m whole
 * chunks but at the end) at *p (< end), validated and stepped over. */
static int check_extra(const ebq_reader *r, const uint8_t *sym, size_t m, const uint8_t **p,
                       const uint8_t *end) {
    if (r->v3) {
        for (size_t i = 0; i < m; i += EBQ_CHUNK)
            if (!check_bits(sym + i, m - i < EBQ_CHUNK ? m - i : EBQ_CHUNK, p, end)) return 0;
        return 1;
    }
    for (const uint8_t *s = sym; m && (s = memchr(s, ESC, (size_t)(sym + m - s))); s++) {
        uint32_t v;
        if (!read_escape(p, end, &v)) return 0;
    }
    return 1;
}

/* v2: the decoder of the next segment's stream (validated sizes). */
static mpiucc_status next_segment(ebq_reader *r) {
    size_t i0 = r->seg * EBQ_DENSE_SEGMENT, m = r->n - i0 < EBQ_DENSE_SEGMENT ? r->n - i0
                                                                          : EBQ_DENSE_SEGMENT;
    uint64_t size = mpiucc_get_u64(r->sizes + 8 * r->seg);
    mpiucc_status st = mpiucc_rans_decoder_init(&r->dec, r->seg_at, (size_t)size, m);
    r->seg_at += size;
    r->seg++;
    return st;
}

/* The symbols of elements [i0, i0 + m) into r->chunk (m <= EBQ_DENSE_CHUNK; v2: within one
 * segment, whose decoder is opened at its first chunk). */
static mpiucc_status next_chunk(ebq_reader *r, size_t i0, size_t m) {
    r->chunk_end = i0 + m;
    if (r->v2 && i0 % EBQ_DENSE_SEGMENT == 0) {
        if (i0 && mpiucc_rans_decoder_finish(&r->dec) != MPIUCC_OK) return MPIUCC_ERR_CORRUPT;
        if (next_segment(r) != MPIUCC_OK) return MPIUCC_ERR_CORRUPT;
    }
    return mpiucc_rans_decoder_next(&r->dec, r->chunk, m);
}

/* v2, one pass: every segment's stream into the scratch, on threads. */
typedef struct {
    const ebq_reader *r;
    uint8_t *scratch;
    const uint8_t *stream[MPIUCC_MAX_THREADS + 1]; /* first stream of each part */
    size_t first[MPIUCC_MAX_THREADS + 1];          /* first segment of each part */
    int bad[MPIUCC_MAX_THREADS];
} decode_job;

static void decode_streams(void *ctx, int t) {
    decode_job *J = (decode_job *)ctx;
    const uint8_t *p = J->stream[t];
    for (size_t s = J->first[t]; s < J->first[t + 1]; s++) {
        size_t i0 = s * EBQ_DENSE_SEGMENT, m = J->r->n - i0 < EBQ_DENSE_SEGMENT
                                                   ? J->r->n - i0
                                                   : EBQ_DENSE_SEGMENT;
        uint64_t size = mpiucc_get_u64(J->r->sizes + 8 * s);
        J->bad[t] |= mpiucc_rans_decode(p, (size_t)size, J->scratch + i0, m) != MPIUCC_OK;
        p += size;
    }
}

static int decode_all(const ebq_reader *r, uint8_t *scratch, unsigned threads) {
    size_t nseg = segments_of(r->n);
    int parts = mpiucc_threads_for(threads, r->n);
    if ((size_t)parts > nseg) parts = nseg ? (int)nseg : 1;
    decode_job J;
    J.r = r;
    J.scratch = scratch;
    const uint8_t *p = r->rans;
    size_t s = 0;
    for (int t = 0; t <= parts; t++) {
        size_t first = nseg * (size_t)t / (size_t)parts;
        for (; s < first; s++) p += mpiucc_get_u64(r->sizes + 8 * s);
        J.first[t] = first;
        J.stream[t] = p;
        if (t < parts) J.bad[t] = 0;
    }
    mpiucc_parallel(parts, decode_streams, &J);
    for (int t = 0; t < parts; t++)
        if (J.bad[t]) return 0;
    return 1;
}

mpiucc_status ebq_dense_reader_init(ebq_reader *r, const mpiucc_header *h,
                                    const uint8_t *payload, uint8_t *scratch,
                                    size_t scratch_size, unsigned threads) {
    size_t n = h->count, es = mpiucc_dtype_size((mpiucc_dtype)h->dtype);
    uint64_t ps = h->payload_size, head = ebq_dense_head(h->version, n);
    if (ps < head) return MPIUCC_ERR_CORRUPT;
    uint64_t rest = ps - head, esize = mpiucc_get_u64(payload + 8), rsize = 0;
    r->dense = 1;
    r->n = n;
    r->v2 = h->version >= 2;
    r->v3 = h->version >= 3;
    r->n_outliers = mpiucc_get_u64(payload);
    if (r->v2) { /* the streams' sizes, summed without overflow */
        r->sizes = payload + 16;
        for (size_t s = 0; s < segments_of(n); s++) {
            uint64_t z = mpiucc_get_u64(r->sizes + 8 * s);
            if (z > rest || rsize > rest - z) return MPIUCC_ERR_CORRUPT;
            rsize += z;
        }
    } else {
        rsize = mpiucc_get_u64(payload + 16);
    }
    if (esize > rest || rsize > rest - esize || r->n_outliers > n ||
        r->n_outliers > (rest - esize - rsize) / (es + 1))
        return MPIUCC_ERR_CORRUPT;
    r->esc = payload + head;
    const uint8_t *rans = r->esc + esize;
    r->rans = r->seg_at = rans;
    r->outliers = rans + rsize;
    r->end = payload + ps;
    mpiucc_status st = ebq_check_outliers(r->outliers, r->end, r->n_outliers, n, es);
    if (st != MPIUCC_OK) return st;
    const uint8_t *p = r->esc;
    if (scratch && scratch_size >= n) { /* one pass: every symbol into the caller's scratch */
        if (r->v2 ? !decode_all(r, scratch, threads)
                  : mpiucc_rans_decode(rans, (size_t)rsize, scratch, n) != MPIUCC_OK)
            return MPIUCC_ERR_CORRUPT;
        /* the escapes checked part by part, so that parts of the blocks read on threads know
         * where theirs start (DELTA needs every earlier index: one part) */
        r->parts = (h->aux >> 8) & 0xff ? 1 : mpiucc_threads_for(threads, n);
        for (int t = 0; t < r->parts; t++) {
            size_t i0 = ebq_part_start(n, r->parts, t), i1 = ebq_part_start(n, r->parts, t + 1);
            r->esc_at[t] = p;
            if (!check_extra(r, scratch + i0, i1 - i0, &p, rans)) return MPIUCC_ERR_CORRUPT;
        }
        r->sym = scratch;
        return p == rans ? MPIUCC_OK : MPIUCC_ERR_CORRUPT;
    }
    /* Pass 1: the whole rANS stream and every escape, so that nothing is written on error. */
    if (!r->v2 && mpiucc_rans_decoder_init(&r->dec, rans, (size_t)rsize, n) != MPIUCC_OK)
        return MPIUCC_ERR_CORRUPT;
    for (size_t i0 = 0; i0 < n; i0 += EBQ_DENSE_CHUNK) {
        size_t m = n - i0 < EBQ_DENSE_CHUNK ? n - i0 : EBQ_DENSE_CHUNK;
        if (next_chunk(r, i0, m) != MPIUCC_OK || !check_extra(r, r->chunk, m, &p, rans))
            return MPIUCC_ERR_CORRUPT;
    }
    if ((n || !r->v2) && mpiucc_rans_decoder_finish(&r->dec) != MPIUCC_OK) return MPIUCC_ERR_CORRUPT;
    if (p != rans) return MPIUCC_ERR_CORRUPT;
    /* Pass 2 decodes the same streams again, block by block. */
    r->chunk_end = 0;
    r->seg = 0;
    r->seg_at = rans;
    return r->v2 ? MPIUCC_OK : mpiucc_rans_decoder_init(&r->dec, rans, (size_t)rsize, n);
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
    if (r->v3) {
        if (i0 % EBQ_CHUNK == 0) { /* drop the previous chunk's padding, give back whole
                                    * bytes read ahead (its data ends on a byte) */
            r->esc -= r->nbits / 8;
            r->acc = 0;
            r->nbits = 0;
        }
        uint8_t any = 0;
        for (size_t i = 0; i < m; i++) any |= sym[i];
        if (!(any & LIT)) {
            for (size_t i = 0; i < m; i++) z[i] = sym[i];
        } else {
            uint64_t acc = r->acc;
            unsigned n = r->nbits;
            const uint8_t *p = r->esc, *end = r->rans;
            for (size_t i = 0; i < m; i++) { /* without a branch on the symbol's kind */
                unsigned s = sym[i], wide = s >= LIT;
                unsigned nb = wide ? wide_bits(s) : 0; /* validated by the reader's init */
                if (n < nb) { /* 4 bytes at once within the extra bits, else byte by byte */
                    if (end - p >= 4) {
                        acc |= (uint64_t)mpiucc_get_u32(p) << n;
                        p += 4;
                        n += 32;
                    } else {
                        for (; n < nb; n += 8) acc |= (uint64_t)*p++ << n;
                    }
                }
                uint32_t low = (uint32_t)acc & ((1u << nb) - 1);
                z[i] = wide ? (4u | ((s - LIT) & 3)) << nb | low : s;
                acc >>= nb;
                n -= nb;
            }
            r->esc = p;
            r->acc = acc;
            r->nbits = n;
        }
    } else {
        for (size_t i = 0; i < m; i++) {
            z[i] = sym[i];
            if (sym[i] == ESC) {
                uint32_t v = 0;
                read_escape(&r->esc, r->outliers, &v); /* validated by the reader's init */
                z[i] = ESC + v;
            }
        }
    }
    for (size_t i = m; i < EBQ_BLOCK; i++) z[i] = 0;
}
