/* rANS decoder: stream parsing and validation, interleaved table-driven decoding with
 * contexts (entropy.h). */
#include "entropy.h"
#include "internal.h"


/* LSB-first bit reader that reports running past the end. */
typedef struct {
    const uint8_t *p, *end;
    uint64_t acc;
    int bits;
    int overrun;
} bit_reader;

static uint32_t get_bits(bit_reader *r, int nbits) {
    while (r->bits < nbits) {
        if (r->p == r->end) {
            r->overrun = 1;
            return 0;
        }
        r->acc |= (uint64_t)*r->p++ << r->bits;
        r->bits += 8;
    }
    uint32_t v = (uint32_t)(r->acc & ((1u << nbits) - 1));
    r->acc >>= nbits;
    r->bits -= nbits;
    return v;
}

/* Parse and validate one frequency table: fill slot -> symbol and symbol -> (f, cum). */
static mpiucc_status read_table(bit_reader *r, int prob_bits, uint8_t *slot, uint32_t info[256]) {
    uint32_t scale = 1u << prob_bits, cum = 0;
    int nused = (int)get_bits(r, 8) + 1, prev = -1;
    for (int k = 0; k < nused; k++) {
        int s;
        if (get_bits(r, 1)) {
            if (k == 0 || prev == 255) return MPIUCC_ERR_CORRUPT;
            s = prev + 1;
        } else {
            s = (int)get_bits(r, 8);
            if (s <= prev && !r->overrun) return MPIUCC_ERR_CORRUPT;
        }
        uint32_t f = scale - cum;
        if (k + 1 < nused) {
            int b = (int)get_bits(r, 4);
            if (r->overrun) return MPIUCC_ERR_TRUNCATED;
            if (b < 1 || b > prob_bits) return MPIUCC_ERR_CORRUPT;
            f = (1u << (b - 1)) | get_bits(r, b - 1);
            if (cum + f >= scale && !r->overrun) return MPIUCC_ERR_CORRUPT;
        }
        if (r->overrun) return MPIUCC_ERR_TRUNCATED;
        memset(slot + cum, s, f);
        info[s] = f | cum << 16;
        cum += f;
        prev = s;
    }
    return MPIUCC_OK;
}

static inline uint32_t get_u16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap16(v);
#endif
    return v;
}

/* if (x < RANS_L) x = y, q++; with flags, not branches (compilers tend to branch here). */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(MPIUCC_RANS_NO_ASM)
#define RANS_REFILL(x, y, q)                                                                \
    __asm__("cmpl $0x10000, %[st]\n\tcmovbl %[nx], %[st]\n\tadcq $0, %[wq]"                 \
            : [st] "+r"(x), [wq] "+r"(q)                                                    \
            : [nx] "r"(y)                                                                   \
            : "cc")
#else
#define RANS_REFILL(x, y, q)           \
    do {                               \
        uint32_t small_ = (x) < RANS_L; \
        (x) = small_ ? (y) : (x);      \
        (q) += small_;                 \
    } while (0)
#endif

/* Decode one symbol s of lane state x with the group's tables, then refill x from word q at
 * p when it fell below RANS_L. The word is loaded whether or not it is used (the caller
 * guarantees two readable bytes), so that no branch depends on the data. */
#define RANS_DEC_STEP(x, s)                                                    \
    do {                                                                       \
        uint32_t slot_ = (x) & ((1u << P) - 1);                                \
        (s) = slot[slot_];                                                     \
        uint32_t e_ = info[(s)];                                               \
        (x) = (e_ & 0xffffu) * ((x) >> P) + slot_ - (e_ >> 16);                \
        uint32_t y_ = (x) << 16 | get_u16(p + 2 * q);                          \
        RANS_REFILL(x, y_, q);                                                 \
    } while (0)

/* Whole groups while at least 2 bytes per lane remain before end (words or the states after
 * them: loads may reach into the states, consumption is checked later); returns the symbols
 * decoded and leaves *pp after the words consumed. */
static inline __attribute__((always_inline)) size_t
decode_groups(const rans_dec_tables *t, const int P, const uint8_t **pp, const uint8_t *end,
              uint32_t x[RANS_LANES], uint32_t *ctx, uint8_t *sym, size_t n) {
    const uint8_t *p = *pp;
    size_t q = 0;
    uint32_t x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
    uint32_t x4 = x[4], x5 = x[5], x6 = x[6], x7 = x[7];
    uint32_t c = *ctx;
    size_t i = 0;
    for (; n - i >= RANS_LANES && (size_t)(end - p) - 2 * q >= 2 * RANS_LANES; i += RANS_LANES) {
        const uint8_t *slot = t->slot + (c << P);
        const uint32_t *info = t->info[c];
        uint32_t s, sum;
        RANS_DEC_STEP(x0, s);
        sym[i] = (uint8_t)s, sum = s;
        RANS_DEC_STEP(x1, s);
        sym[i + 1] = (uint8_t)s, sum += s;
        RANS_DEC_STEP(x2, s);
        sym[i + 2] = (uint8_t)s, sum += s;
        RANS_DEC_STEP(x3, s);
        sym[i + 3] = (uint8_t)s, sum += s;
        RANS_DEC_STEP(x4, s);
        sym[i + 4] = (uint8_t)s, sum += s;
        RANS_DEC_STEP(x5, s);
        sym[i + 5] = (uint8_t)s, sum += s;
        RANS_DEC_STEP(x6, s);
        sym[i + 6] = (uint8_t)s, sum += s;
        RANS_DEC_STEP(x7, s);
        sym[i + 7] = (uint8_t)s, sum += s;
        c = t->ctx_of_sum[sum];
    }
    x[0] = x0, x[1] = x1, x[2] = x2, x[3] = x3, x[4] = x4, x[5] = x5, x[6] = x6, x[7] = x7;
    *pp = p + 2 * q;
    *ctx = c;
    return i;
}

static size_t decode_groups_12(const rans_dec_tables *t, const uint8_t **pp, const uint8_t *end,
                               uint32_t *x, uint32_t *c, uint8_t *sym, size_t n) {
    return decode_groups(t, 12, pp, end, x, c, sym, n);
}
static size_t decode_groups_13(const rans_dec_tables *t, const uint8_t **pp, const uint8_t *end,
                               uint32_t *x, uint32_t *c, uint8_t *sym, size_t n) {
    return decode_groups(t, 13, pp, end, x, c, sym, n);
}
static size_t decode_groups_14(const rans_dec_tables *t, const uint8_t **pp, const uint8_t *end,
                               uint32_t *x, uint32_t *c, uint8_t *sym, size_t n) {
    return decode_groups(t, 14, pp, end, x, c, sym, n);
}

/* Symbols sym[0..m) one at a time, every read checked against d->words_end. */
static mpiucc_status decode_checked(mpiucc_rans_decoder *d, uint8_t *sym, size_t m) {
    const rans_dec_tables *t = &d->t;
    const int P = d->prob_bits;
    for (size_t k = 0; k < m; k++, d->i++) {
        unsigned lane = (unsigned)(d->i % RANS_LANES);
        uint32_t *xl = &d->x[lane];
        uint32_t slot = *xl & ((1u << P) - 1), s = t->slot[(d->ctx << P) + slot];
        uint32_t e = t->info[d->ctx][s];
        *xl = (e & 0xffffu) * (*xl >> P) + slot - (e >> 16);
        sym[k] = (uint8_t)s;
        d->group_sum += s;
        if (lane == RANS_LANES - 1) {
            d->ctx = t->ctx_of_sum[d->group_sum];
            d->group_sum = 0;
        }
        if (*xl < RANS_L) {
            if (d->words_end - d->p < 2) return MPIUCC_ERR_TRUNCATED;
            *xl = *xl << 16 | get_u16(d->p);
            d->p += 2;
        }
    }
    return MPIUCC_OK;
}

static mpiucc_status init_rans(mpiucc_rans_decoder *d, const uint8_t *in, size_t in_size) {
    const uint8_t *end = in + in_size;
    if (in_size < 2) return MPIUCC_ERR_TRUNCATED;
    rans_model m = {(in[1] & 7) + 1, (in[1] >> 3) & 7, RANS_MIN_PROB + (in[1] >> 6)};
    if (m.prob_bits > RANS_MAX_PROB || (m.nctx << m.prob_bits) > (1 << 15))
        return MPIUCC_ERR_CORRUPT;
    d->prob_bits = m.prob_bits;
    rans_dec_tables *t = &d->t;
    bit_reader r = {in + 2, end, 0, 0, 0};
    for (int c = 0; c < m.nctx; c++) {
        mpiucc_status st = read_table(&r, m.prob_bits, t->slot + (c << m.prob_bits), t->info[c]);
        if (st != MPIUCC_OK) return st;
    }
    t->ctx_of_sum[0] = (uint8_t)rans_context(&m, 0); /* sums of bit length b: [2^(b-1), 2^b) */
    for (unsigned b = 1; b < RANS_FINE; b++) {
        uint32_t lo = 1u << (b - 1), hi = (1u << b) - 1;
        if (hi > RANS_MAX_SUM) hi = RANS_MAX_SUM;
        memset(t->ctx_of_sum + lo, (int)rans_context(&m, b), hi - lo + 1);
    }
    /* Words from the end of the tables (the padding bits of their last byte are ignored) up
     * to the states, the last 4 * RANS_LANES bytes. */
    d->p = r.p;
    if ((size_t)(end - d->p) < 4 * RANS_LANES) return MPIUCC_ERR_TRUNCATED;
    d->words_end = end - 4 * RANS_LANES;
    for (int l = 0; l < RANS_LANES; l++) {
        d->x[l] = mpiucc_get_u32(d->words_end + 4 * l);
        if (d->x[l] < RANS_L) return MPIUCC_ERR_CORRUPT;
    }
    d->ctx = t->ctx_of_sum[0];
    d->group_sum = 0;
    return MPIUCC_OK;
}

mpiucc_status mpiucc_rans_decoder_init(mpiucc_rans_decoder *d, const uint8_t *in,
                                       size_t in_size, size_t n) {
    if (!d || (!in && in_size)) return MPIUCC_ERR_ARG;
    d->in = in;
    d->in_size = in_size;
    d->n = n;
    d->i = 0;
    if (in_size < 1) return MPIUCC_ERR_TRUNCATED;
    d->mode = in[0];
    switch (in[0]) {
    case 0:
        if (in_size - 1 < n) return MPIUCC_ERR_TRUNCATED;
        return in_size - 1 > n ? MPIUCC_ERR_CORRUPT : MPIUCC_OK;
    case 1:
        if (in_size < 2) return MPIUCC_ERR_TRUNCATED;
        return in_size > 2 || n == 0 ? MPIUCC_ERR_CORRUPT : MPIUCC_OK;
    case 2:
        return init_rans(d, in, in_size);
    default:
        return MPIUCC_ERR_CORRUPT;
    }
}

mpiucc_status mpiucc_rans_decoder_next(mpiucc_rans_decoder *d, uint8_t *sym, size_t m) {
    if (m > d->n - d->i || (!sym && m)) return MPIUCC_ERR_ARG;
    if (d->mode == 0) {
        if (m) memcpy(sym, d->in + 1 + d->i, m);
        d->i += m;
        return MPIUCC_OK;
    }
    if (d->mode == 1) {
        memset(sym, d->in[1], m);
        d->i += m;
        return MPIUCC_OK;
    }
    size_t done = 0;
    if (d->i % RANS_LANES == 0) { /* whole groups, loads bounded by the stream's end */
        const uint8_t *end = d->in + d->in_size;
        size_t (*groups)(const rans_dec_tables *, const uint8_t **, const uint8_t *, uint32_t *,
                         uint32_t *, uint8_t *, size_t) =
            d->prob_bits == 12 ? decode_groups_12 : d->prob_bits == 13 ? decode_groups_13
                                                                        : decode_groups_14;
        done = groups(&d->t, &d->p, end, d->x, &d->ctx, sym, m);
        d->i += done;
        if (d->p > d->words_end) return MPIUCC_ERR_CORRUPT;
    }
    return decode_checked(d, sym + done, m - done);
}

mpiucc_status mpiucc_rans_decoder_finish(const mpiucc_rans_decoder *d) {
    if (d->i != d->n) return MPIUCC_ERR_ARG;
    if (d->mode != 2) return MPIUCC_OK;
    if (d->p != d->words_end) return MPIUCC_ERR_CORRUPT;
    for (int l = 0; l < RANS_LANES; l++)
        if (d->x[l] != RANS_L) return MPIUCC_ERR_CORRUPT;
    return MPIUCC_OK;
}

mpiucc_status mpiucc_rans_decode(const uint8_t *in, size_t in_size, uint8_t *sym, size_t n) {
    if ((!in && in_size) || (!sym && n)) return MPIUCC_ERR_ARG;
    mpiucc_rans_decoder d;
    mpiucc_status st = mpiucc_rans_decoder_init(&d, in, in_size, n);
    if (st == MPIUCC_OK) st = mpiucc_rans_decoder_next(&d, sym, n);
    return st == MPIUCC_OK ? mpiucc_rans_decoder_finish(&d) : st;
}
