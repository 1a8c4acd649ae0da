/* rANS encoder: histogram, frequency normalization, table, interleaved encoding (entropy.h). */
#include "entropy.h"
#include "internal.h"

#define PROB_SCALE (1u << RANS_PROB_BITS)

/* One symbol's encoding constants; q = x / f is computed as
 * ((x * rcp >> 32) + x) >> shift (Granlund-Montgomery, exact for every 32-bit x). */
typedef struct {
    uint32_t x_max; /* states at or above this emit a word before coding the symbol */
    uint32_t rcp;   /* ceil(2^(32 + shift) / f) - 2^32 */
    uint32_t bias;  /* cum */
    uint16_t cmpl;  /* 2^RANS_PROB_BITS - f */
    uint16_t shift; /* ceil(log2 f) */
} rans_enc_sym;

size_t mpiucc_rans_bound(size_t n) { return n + 1; }

/* Counts of the n symbols; four partial histograms keep runs of one symbol from serializing
 * on a single counter. */
static void histogram(const uint8_t *sym, size_t n, uint64_t count[256]) {
    uint32_t h[4][256];
    memset(count, 0, 256 * sizeof count[0]);
    while (n) {
        size_t m = n < ((size_t)1 << 30) ? n : ((size_t)1 << 30), i = 0;
        memset(h, 0, sizeof h);
        for (; i + 8 <= m; i += 8) {
            uint64_t w;
            memcpy(&w, sym + i, 8);
            h[0][(uint8_t)w]++;
            h[1][(uint8_t)(w >> 8)]++;
            h[2][(uint8_t)(w >> 16)]++;
            h[3][(uint8_t)(w >> 24)]++;
            h[0][(uint8_t)(w >> 32)]++;
            h[1][(uint8_t)(w >> 40)]++;
            h[2][(uint8_t)(w >> 48)]++;
            h[3][(uint8_t)(w >> 56)]++;
        }
        for (; i < m; i++) h[0][sym[i]]++;
        for (int s = 0; s < 256; s++) count[s] += (uint64_t)h[0][s] + h[1][s] + h[2][s] + h[3][s];
        sym += m;
        n -= m;
    }
}

/* Frequencies f[s] >= 1 for every used symbol, summing to PROB_SCALE, close to minimizing
 * sum count[s] * log2(PROB_SCALE / f[s]): proportional floors, then one unit at a time to the
 * symbol that gains most (or from the one that loses least), with count / (f +- 1/2) as the
 * slope of count * ln f. Plain IEEE double arithmetic: the same on every machine. */
static void normalize(const uint64_t count[256], size_t n, const uint8_t *used, int nused,
                      uint32_t f[256]) {
    double scale = (double)PROB_SCALE / (double)n;
    uint32_t sum = 0;
    for (int k = 0; k < nused; k++) {
        int s = used[k];
        double v = (double)count[s] * scale;
        uint32_t q = v < 1.0 ? 1u : (uint32_t)v;
        f[s] = q;
        sum += q;
    }
    while (sum < PROB_SCALE) {
        int best = used[0];
        double gain = -1.0;
        for (int k = 0; k < nused; k++) {
            int s = used[k];
            double g = (double)count[s] / ((double)f[s] + 0.5);
            if (g > gain) gain = g, best = s;
        }
        f[best]++;
        sum++;
    }
    while (sum > PROB_SCALE) {
        int best = -1;
        double loss = 0.0;
        for (int k = 0; k < nused; k++) {
            int s = used[k];
            if (f[s] <= 1) continue;
            double l = (double)count[s] / ((double)f[s] - 0.5);
            if (best < 0 || l < loss) loss = l, best = s;
        }
        f[best]--; /* some f > 1 exists: nused <= 256 < PROB_SCALE */
        sum--;
    }
}

/* LSB-first bit writer into a buffer known to be large enough. */
typedef struct {
    uint8_t *p;
    uint64_t acc;
    int bits;
} bit_writer;

static void put_bits(bit_writer *w, uint32_t v, int nbits) {
    w->acc |= (uint64_t)v << w->bits;
    w->bits += nbits;
    while (w->bits >= 8) {
        *w->p++ = (uint8_t)w->acc;
        w->acc >>= 8;
        w->bits -= 8;
    }
}

static int bit_length(uint32_t v) { return 32 - __builtin_clz(v); }

/* The frequency table (entropy.h); returns its size in bytes. buf holds at least 1024. */
static size_t write_table(const uint8_t *used, int nused, const uint32_t f[256], uint8_t *buf) {
    bit_writer w = {buf, 0, 0};
    put_bits(&w, (uint32_t)(nused - 1), 8);
    for (int k = 0; k < nused; k++) {
        int s = used[k];
        if (k > 0 && s == used[k - 1] + 1) {
            put_bits(&w, 1, 1);
        } else {
            put_bits(&w, 0, 1);
            put_bits(&w, (uint32_t)s, 8);
        }
        if (k + 1 < nused) {
            int b = bit_length(f[s]);
            put_bits(&w, (uint32_t)b, 4);
            put_bits(&w, f[s] & ((1u << (b - 1)) - 1), b - 1);
        }
    }
    if (w.bits) put_bits(&w, 0, 8 - w.bits);
    return (size_t)(w.p - buf);
}

static void build_enc(const uint8_t *used, int nused, const uint32_t f[256],
                      rans_enc_sym e[256]) {
    uint32_t cum = 0;
    for (int k = 0; k < nused; k++) {
        int s = used[k];
        uint32_t fs = f[s];
        uint32_t shift = fs > 1 ? (uint32_t)bit_length(fs - 1) : 0;
        e[s].x_max = fs << (32 - RANS_PROB_BITS);
        e[s].rcp = (uint32_t)((((uint64_t)1 << (32 + shift)) + fs - 1) / fs - ((uint64_t)1 << 32));
        e[s].bias = cum;
        e[s].cmpl = (uint16_t)(PROB_SCALE - fs);
        e[s].shift = (uint16_t)shift;
        cum += fs;
    }
}

/* One coding step of lane state x for symbol s; the word, if any, goes below p. The store
 * is unconditional (the caller keeps two bytes of room) and the pointer moves only when the
 * state is too large, which keeps the loop free of unpredictable branches. */
#define RANS_ENC_STEP(x, s)                                                             \
    do {                                                                                \
        const rans_enc_sym *e_ = &enc[(s)];                                             \
        uint32_t big_ = (x) >= e_->x_max;                                               \
        p[-2] = (uint8_t)(x);                                                           \
        p[-1] = (uint8_t)((x) >> 8);                                                    \
        p -= 2 * big_;                                                                  \
        (x) = big_ ? (x) >> 16 : (x);                                                   \
        uint32_t q_ = (uint32_t)(((((uint64_t)(x)*e_->rcp) >> 32) + (x)) >> e_->shift); \
        (x) = (x) + e_->bias + q_ * e_->cmpl;                                           \
    } while (0)

/* The same with the room checked before the store, for the last bytes of room. */
#define RANS_ENC_STEP_CHECKED(x, s)                                                     \
    do {                                                                                \
        const rans_enc_sym *e_ = &enc[(s)];                                             \
        if ((x) >= e_->x_max) {                                                         \
            if (p - lo < 2) return NULL;                                                \
            p -= 2;                                                                     \
            p[0] = (uint8_t)(x);                                                        \
            p[1] = (uint8_t)((x) >> 8);                                                 \
            (x) >>= 16;                                                                 \
        }                                                                               \
        uint32_t q_ = (uint32_t)(((((uint64_t)(x)*e_->rcp) >> 32) + (x)) >> e_->shift); \
        (x) = (x) + e_->bias + q_ * e_->cmpl;                                           \
    } while (0)

/* Encode sym[0..n) backwards into the words below end, never below lo; returns the lowest
 * word's address, or NULL when the words do not fit. st receives the final states. */
static uint8_t *encode_lanes(const rans_enc_sym *enc, const uint8_t *sym, size_t n, uint8_t *lo,
                             uint8_t *end, uint32_t st[RANS_LANES]) {
    uint32_t x[RANS_LANES];
    uint8_t *p = end;
    size_t i = n;
    for (int l = 0; l < RANS_LANES; l++) x[l] = RANS_L;
    while (i % RANS_LANES) {
        i--;
        RANS_ENC_STEP_CHECKED(x[i % RANS_LANES], sym[i]);
    }
    uint32_t x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
    uint32_t x4 = x[4], x5 = x[5], x6 = x[6], x7 = x[7];
    while (i) {
        i -= RANS_LANES;
        const uint8_t *s = sym + i;
        if (p - lo >= 2 * RANS_LANES) {
            RANS_ENC_STEP(x7, s[7]);
            RANS_ENC_STEP(x6, s[6]);
            RANS_ENC_STEP(x5, s[5]);
            RANS_ENC_STEP(x4, s[4]);
            RANS_ENC_STEP(x3, s[3]);
            RANS_ENC_STEP(x2, s[2]);
            RANS_ENC_STEP(x1, s[1]);
            RANS_ENC_STEP(x0, s[0]);
        } else {
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

mpiucc_status mpiucc_rans_encode(const uint8_t *sym, size_t n, uint8_t *out, size_t cap,
                                 size_t *size) {
    if ((!sym && n) || (!out && cap) || !size || n == SIZE_MAX) return MPIUCC_ERR_ARG;
    if (n < 2 * RANS_LANES) return put_raw(sym, n, out, cap, size);

    uint64_t count[256];
    histogram(sym, n, count);
    uint8_t used[256];
    int nused = 0;
    for (int s = 0; s < 256; s++)
        if (count[s]) used[nused++] = (uint8_t)s;
    if (nused == 1) {
        if (cap < 2) return MPIUCC_ERR_CAPACITY;
        out[0] = 1;
        out[1] = used[0];
        *size = 2;
        return MPIUCC_OK;
    }

    uint32_t f[256];
    normalize(count, n, used, nused, f);
    uint8_t table[1024];
    size_t tsize = write_table(used, nused, f, table);
    rans_enc_sym enc[256];
    build_enc(used, nused, f, enc);

    /* Words go down from the end of the room that raw would need; when they reach the
     * table and states, raw is no larger, so raw it is. */
    size_t head = 1 + tsize + 4 * RANS_LANES;
    size_t room = cap < n + 1 ? cap : n + 1;
    if (room < head) return put_raw(sym, n, out, cap, size);
    uint32_t st[RANS_LANES];
    uint8_t *lo = encode_lanes(enc, sym, n, out + head, out + room, st);
    if (!lo) return put_raw(sym, n, out, cap, size);

    size_t words = (size_t)(out + room - lo);
    memmove(out + head, lo, words);
    out[0] = 2;
    memcpy(out + 1, table, tsize);
    for (int l = 0; l < RANS_LANES; l++) mpiucc_put_u32(out + 1 + tsize + 4 * l, st[l]);
    *size = head + words;
    return MPIUCC_OK;
}
