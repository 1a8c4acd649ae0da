/* rANS encoder: stream layout, frequency tables, interleaved context coding (entropy.h). */
#include "entropy.h"
#include "internal.h"

/* One symbol's encoding constants in one context. q = x / f is the high half of x * rcp
 * (rcp = ceil(2^64 / f), exact for 32-bit x); for f = 1, rcp = 2^64 - 1 gives x - 1, which
 * bias makes up for. */
typedef struct {
    uint64_t rcp;
    uint32_t x_lim; /* states above this emit a word before coding the symbol */
    uint16_t bias;  /* cum, plus cmpl when f = 1 */
    uint16_t cmpl;  /* 2^P - f */
} rans_enc_sym;

size_t mpiucc_rans_bound(size_t n) { return n + 1; }

/* LSB-first bit writer that stops at its limit and reports it. */
typedef struct {
    uint8_t *p, *end;
    uint64_t acc;
    int bits;
    int overflow;
} bit_writer;

static void put_bits(bit_writer *w, uint32_t v, int nbits) {
    if (w->overflow) return;
    w->acc |= (uint64_t)v << w->bits;
    w->bits += nbits;
    while (w->bits >= 8) {
        if (w->p == w->end) {
            w->overflow = 1;
            return;
        }
        *w->p++ = (uint8_t)w->acc;
        w->acc >>= 8;
        w->bits -= 8;
    }
}

/* One context's table (entropy.h). */
static void write_table(bit_writer *w, const uint16_t f[256]) {
    uint8_t used[256];
    int nused = 0;
    for (int s = 0; s < 256; s++)
        if (f[s]) used[nused++] = (uint8_t)s;
    put_bits(w, (uint32_t)(nused - 1), 8);
    for (int k = 0; k < nused; k++) {
        int s = used[k];
        if (k > 0 && s == used[k - 1] + 1) {
            put_bits(w, 1, 1);
        } else {
            put_bits(w, 0, 1);
            put_bits(w, (uint32_t)s, 8);
        }
        if (k + 1 < nused) {
            int b = (int)rans_bit_length(f[s]);
            put_bits(w, (uint32_t)b, 4);
            put_bits(w, f[s] & ((1u << (b - 1)) - 1), b - 1);
        }
    }
}

static void build_enc(const uint16_t f[256], int p, rans_enc_sym e[256]) {
    uint32_t cum = 0;
    for (int s = 0; s < 256; s++) {
        uint32_t fs = f[s];
        if (!fs) continue;
        e[s].x_lim = (uint32_t)(((uint64_t)fs << (32 - p)) - 1);
        e[s].cmpl = (uint16_t)((1u << p) - fs);
        if (fs == 1) {
            e[s].rcp = ~(uint64_t)0;
            e[s].bias = (uint16_t)(cum + e[s].cmpl);
        } else {
            e[s].rcp = ~(uint64_t)0 / fs + 1; /* ceil(2^64 / fs), powers of 2 included */
            e[s].bias = (uint16_t)cum;
        }
        cum += fs;
    }
}

static inline void put_u16(uint8_t *p, uint32_t v) {
    uint16_t w = (uint16_t)v;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap16(w);
#endif
    memcpy(p, &w, 2);
}

/* The high 64 bits of x * rcp (x < 2^32, so they fit in 32 bits). */
static inline uint32_t mul_hi(uint32_t x, uint64_t rcp) {
#ifdef __SIZEOF_INT128__
    return (uint32_t)(((unsigned __int128)x * rcp) >> 64);
#else
    return (uint32_t)(((uint64_t)x * (rcp >> 32) + (((uint64_t)x * (uint32_t)rcp) >> 32)) >> 32);
#endif
}

/* One coding step of lane state x for symbol s with the context's table e. A state above
 * x_lim first emits its low 16 bits as the word at wp + 2 r, and r (minus the words written
 * so far) decreases by one; the store itself is unconditional (the caller keeps room), so no
 * branch depends on the data. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(MPIUCC_RANS_NO_ASM)
#define RANS_SHRINK(x, lim, r) /* if (x > lim) x >>= 16, r--; with flags, not branches */ \
    __asm__("cmpl %[st], %[lm]\n\tcmovbl %[hi], %[st]\n\tsbbq $0, %[wr]"              \
            : [st] "+&r"(x), [wr] "+r"(r)                                                \
            : [lm] "rm"(lim), [hi] "r"((x) >> 16)                                         \
            : "cc")
#else
#define RANS_SHRINK(x, lim, r)                \
    do {                                      \
        uint32_t big_ = (x) > (lim);          \
        (x) = big_ ? (x) >> 16 : (x);         \
        (r) -= big_;                          \
    } while (0)
#endif
#define RANS_ENC_STEP(x, s)                                     \
    do {                                                        \
        const rans_enc_sym *e_ = &e[(s)];                       \
        put_u16(wp + 2 * r, (x));                               \
        RANS_SHRINK(x, e_->x_lim, r);                           \
        (x) = (x) + e_->bias + mul_hi((x), e_->rcp) * e_->cmpl; \
    } while (0)

/* The same with the room checked before the store, for the last bytes of room. */
#define RANS_ENC_STEP_CHECKED(x, s)                                                     \
    do {                                                                                \
        const rans_enc_sym *e_ = &e[(s)];                                               \
        if ((x) > e_->x_lim) {                                                          \
            if (p - lo < 2) return NULL;                                                \
            p -= 2;                                                                     \
            p[0] = (uint8_t)(x);                                                        \
            p[1] = (uint8_t)((x) >> 8);                                                 \
            (x) >>= 16;                                                                 \
        }                                                                               \
        (x) = (x) + e_->bias + mul_hi((x), e_->rcp) * e_->cmpl;                         \
    } while (0)

/* Context table of the group that starts at sym (the sum of the 8 symbols before it). */
static inline const rans_enc_sym *group_table(const rans_enc_sym (*enc)[256],
                                              const uint8_t *ctx_of_len, const uint8_t *sym,
                                              size_t start) {
    uint64_t w = 0;
    if (start) memcpy(&w, sym + start - RANS_LANES, 8);
    return enc[ctx_of_len[rans_bit_length(rans_sum8(w))]];
}

/* Encode sym[0..n) backwards into the words below end, never below lo; returns the lowest
 * word's address, or NULL when the words do not fit. st receives the final states. */
static uint8_t *encode_lanes(const rans_enc_sym (*enc)[256], const uint8_t *ctx_of_len,
                             const uint8_t *sym, size_t n, uint8_t *lo, uint8_t *end,
                             uint32_t st[RANS_LANES]) {
    uint32_t x[RANS_LANES];
    uint8_t *p = end;
    size_t i = n;
    for (int l = 0; l < RANS_LANES; l++) x[l] = RANS_L;
    if (i % RANS_LANES) {
        const rans_enc_sym *e = group_table(enc, ctx_of_len, sym, i - i % RANS_LANES);
        while (i % RANS_LANES) {
            i--;
            RANS_ENC_STEP_CHECKED(x[i % RANS_LANES], sym[i]);
        }
    }
    uint32_t x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
    uint32_t x4 = x[4], x5 = x[5], x6 = x[6], x7 = x[7];
    while (i) {
        size_t fit = (size_t)(p - lo) / (2 * RANS_LANES); /* groups that surely fit */
        if (fit) {
            uint8_t *wp = p - 2;
            ptrdiff_t r = 0; /* minus the words written */
            for (size_t g = fit < i / RANS_LANES ? fit : i / RANS_LANES; g; g--) {
                i -= RANS_LANES;
                const uint8_t *s = sym + i;
                const rans_enc_sym *e = group_table(enc, ctx_of_len, sym, i);
                RANS_ENC_STEP(x7, s[7]);
                RANS_ENC_STEP(x6, s[6]);
                RANS_ENC_STEP(x5, s[5]);
                RANS_ENC_STEP(x4, s[4]);
                RANS_ENC_STEP(x3, s[3]);
                RANS_ENC_STEP(x2, s[2]);
                RANS_ENC_STEP(x1, s[1]);
                RANS_ENC_STEP(x0, s[0]);
            }
            p += 2 * r;
        } else {
            i -= RANS_LANES;
            const uint8_t *s = sym + i;
            const rans_enc_sym *e = group_table(enc, ctx_of_len, sym, i);
            RANS_ENC_STEP_CHECKED(x7, s[7]);
            RANS_ENC_STEP_CHECKED(x6, s[6]);
            RANS_ENC_STEP_CHECKED(x5, s[5]);
            RANS_ENC_STEP_CHECKED(x4, s[4]);
            RANS_ENC_STEP_CHECKED(x3, s[3]);
            RANS_ENC_STEP_CHECKED(x2, s[2]);
            RANS_ENC_STEP_CHECKED(x1, s[1]);
            RANS_ENC_STEP_CHECKED(x0, s[0]);
        }
    }
    st[0] = x0, st[1] = x1, st[2] = x2, st[3] = x3, st[4] = x4, st[5] = x5, st[6] = x6, st[7] = x7;
    return p;
}

static mpiucc_status put_raw(const uint8_t *sym, size_t n, uint8_t *out, size_t cap,
                             size_t *size) {
    if (cap < n + 1) return MPIUCC_ERR_CAPACITY;
    out[0] = 0;
    if (n) memcpy(out + 1, sym, n);
    *size = n + 1;
    return MPIUCC_OK;
}

/* The rANS mode into out[0..room); 0 when it does not fit. Not inlined: its 32 KiB of
 * tables and the model's histograms need not share one stack frame. */
static __attribute__((noinline)) size_t put_rans(const uint8_t *sym, size_t n,
                                                 const rans_model *m,
                                                 const uint16_t freq[RANS_MAX_CTX][256],
                                                 uint8_t *out, size_t room) {
    if (room < 2) return 0;
    out[0] = 2;
    out[1] = (uint8_t)((m->nctx - 1) | m->shift << 3 | (m->prob_bits - RANS_MIN_PROB) << 6);
    bit_writer w = {out + 2, out + room, 0, 0, 0};
    for (int c = 0; c < m->nctx; c++) write_table(&w, freq[c]);
    if (w.bits) put_bits(&w, 0, 8 - w.bits);
    if (w.overflow) return 0;

    rans_enc_sym enc[RANS_MAX_CTX][256];
    uint8_t ctx_of_len[RANS_FINE];
    for (int c = 0; c < m->nctx; c++) build_enc(freq[c], m->prob_bits, enc[c]);
    for (unsigned b = 0; b < RANS_FINE; b++) ctx_of_len[b] = (uint8_t)rans_context(m, b);

    /* Words go down from the end of the room less the states, then move up to the tables;
     * the states follow them. */
    size_t head = (size_t)(w.p - out), tail = 4 * RANS_LANES;
    if (room < head + tail) return 0;
    uint32_t st[RANS_LANES];
    uint8_t *lo = encode_lanes((const rans_enc_sym(*)[256])enc, ctx_of_len, sym, n,
                               out + head, out + room - tail, st);
    if (!lo) return 0;
    size_t words = (size_t)(out + room - tail - lo);
    memmove(out + head, lo, words);
    for (int l = 0; l < RANS_LANES; l++) mpiucc_put_u32(out + head + words + 4 * l, st[l]);
    return head + words + tail;
}

mpiucc_status mpiucc_rans_encode(const uint8_t *sym, size_t n, uint8_t *out, size_t cap,
                                 size_t *size) {
    if ((!sym && n) || (!out && cap) || !size || n == SIZE_MAX) return MPIUCC_ERR_ARG;
    if (n < 2 * RANS_LANES) return put_raw(sym, n, out, cap, size);

    rans_model m;
    uint16_t freq[RANS_MAX_CTX][256];
    if (mpiucc_rans_model(sym, n, &m, freq) == 1) {
        if (cap < 2) return MPIUCC_ERR_CAPACITY;
        out[0] = 1;
        out[1] = sym[0];
        *size = 2;
        return MPIUCC_OK;
    }
    /* rANS only where it beats raw: its room ends where raw's would. */
    size_t sz = put_rans(sym, n, &m, freq, out, cap < n + 1 ? cap : n + 1);
    if (!sz) return put_raw(sym, n, out, cap, size);
    *size = sz;
    return MPIUCC_OK;
}
