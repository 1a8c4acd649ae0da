/* rANS model choice: context histograms, an estimate of the coded size of each candidate
 * model, and frequency normalization (entropy.h). Encoder side only; every step is plain
 * integer or IEEE double arithmetic, so every machine chooses the same model. */
#include "entropy.h"
#include "internal.h"

/* Symbols by the bit length of their group's previous-group sum. Zeros are counted in eight
 * per-position cells (256 + k) rather than one, so that runs of zeros do not serialize on a
 * single counter; the caller folds them into symbol 0. */
typedef uint32_t fine_hist[RANS_FINE][256 + RANS_LANES];

static void count_groups(const uint8_t *sym, size_t groups, uint32_t prev, fine_hist h) {
    for (size_t g = 0; g < groups; g++, sym += RANS_LANES) {
        uint32_t *row = h[31 - __builtin_clz(2 * prev + 1)]; /* bit length of prev */
        uint64_t w;
        memcpy(&w, sym, 8);
        if (w == 0) { /* common in skewed data, and in runs: predictable */
            row[256] += RANS_LANES;
            prev = 0;
            continue;
        }
        /* zero bytes become 256 + k: ((s - 1) >> 8) is all ones for s = 0 only */
        for (int k = 0; k < RANS_LANES; k++) {
            uint32_t s = (uint32_t)(w >> (8 * k)) & 0xffu;
            row[s | (((s - 1) >> 8) & (256u + (uint32_t)k))]++;
        }
        prev = rans_sum8(w);
    }
}

static void fold(fine_hist h, uint64_t count[RANS_FINE][256]) {
    for (int b = 0; b < RANS_FINE; b++) {
        for (int k = 0; k < RANS_LANES; k++) h[b][0] += h[b][256 + k];
        for (int s = 0; s < 256; s++) count[b][s] += h[b][s];
    }
}

/* count[b][s] for the whole input (uint32 cells, emptied every 2^28 groups). */
static void fine_counts(const uint8_t *sym, size_t n, uint64_t count[RANS_FINE][256]) {
    fine_hist h;
    size_t groups = n / RANS_LANES, g = 0;
    memset(count, 0, sizeof(uint64_t) * RANS_FINE * 256);
    while (g < groups) {
        size_t m = groups - g < ((size_t)1 << 28) ? groups - g : ((size_t)1 << 28);
        uint64_t w = 0;
        if (g) memcpy(&w, sym + (g - 1) * RANS_LANES, 8);
        memset(h, 0, sizeof h);
        count_groups(sym + g * RANS_LANES, m, g ? rans_sum8(w) : 0, h);
        fold(h, count);
        g += m;
    }
    if (n % RANS_LANES) {
        uint64_t w = 0;
        if (groups) memcpy(&w, sym + (groups - 1) * RANS_LANES, 8);
        unsigned b = rans_bit_length(rans_sum8(w));
        for (size_t i = groups * RANS_LANES; i < n; i++) count[b][sym[i]]++;
    }
}

/* log2(v) for v > 0, to about 1e-9: frexp is exact, the series is plain arithmetic. */
static double log2_det(double v) {
    int e;
    double m = frexp(v, &e); /* v = m 2^e, m in [0.5, 1) */
    if (m < 0.70710678118654752) m *= 2.0, e--;
    double u = (m - 1.0) / (m + 1.0), u2 = u * u;
    double t = u * (2.0 + u2 * (2.0 / 3 + u2 * (2.0 / 5 + u2 * (2.0 / 7 + u2 * (2.0 / 9)))));
    return (double)e + t * 1.4426950408889634;
}

/* Estimated bits of one context's symbols, counts c[s] over the used symbols, coded with
 * 2^p slots: the entropy, the cost of frequencies raised to 1, and the table's size. */
static double context_bits(const uint64_t *c, const uint8_t *used, int nused, int p) {
    uint64_t total = 0;
    for (int k = 0; k < nused; k++) total += c[used[k]];
    if (total == 0) return 17.0; /* a one-symbol table that is never used */
    double lt = log2_det((double)total), bits = 8.0, stolen = 0.0;
    double scale = (double)(1u << p) / (double)total;
    int prev = -2;
    for (int k = 0; k < nused; k++) {
        int s = used[k];
        if (!c[s]) continue;
        double cs = (double)c[s], lc = log2_det(cs), ideal = lt - lc; /* bits per symbol */
        bits += cs * ideal + (s == prev + 1 ? 5.0 : 13.0);
        prev = s;
        if (cs * scale < 1.0) {            /* raised to one slot: cheaper for this symbol, */
            stolen += 1.0 - cs * scale;    /* dearer for the others */
            bits -= cs * (ideal - (double)p);
        } else {
            bits += floor(lc + (double)p - lt);
        }
    }
    return bits + (double)total * 1.4426950408889634 * stolen / (double)(1u << p);
}

/* Probability bits for K contexts: K * 2^P slots fit in 32 KiB. */
static int prob_bits_for(int nctx) { return nctx <= 2 ? 14 : nctx <= 4 ? 13 : 12; }

/* Range of bit lengths [lo, hi] that context c of (K, h) covers. */
static void context_range(int nctx, int shift, int c, int *lo, int *hi) {
    *lo = c == 0 ? 0 : shift + c;
    *hi = c == nctx - 1 ? RANS_FINE - 1 : shift + c;
}

/* Frequencies f[s] >= 1 for the symbols with c[s] > 0, summing to 2^p, close to minimizing
 * sum c[s] log2(2^p / f[s]): proportional floors, then one unit at a time to the symbol that
 * gains most (or from the one that loses least), with c / (f +- 1/2) as the slope of c ln f. */
static void normalize(const uint64_t *c, const uint8_t *used, int nused, int p, uint16_t *f) {
    uint32_t scale_total = 1u << p, sum = 0;
    uint64_t total = 0;
    uint8_t live[256];
    int nl = 0;
    for (int k = 0; k < nused; k++)
        if (c[used[k]]) total += c[used[k]], live[nl++] = used[k];
    if (nl == 0) { /* never used: any valid table */
        f[0] = (uint16_t)scale_total;
        return;
    }
    double scale = (double)scale_total / (double)total;
    for (int k = 0; k < nl; k++) {
        double v = (double)c[live[k]] * scale;
        uint32_t q = v < 1.0 ? 1u : (uint32_t)v;
        f[live[k]] = (uint16_t)q;
        sum += q;
    }
    while (sum < scale_total) {
        int best = live[0];
        double gain = -1.0;
        for (int k = 0; k < nl; k++) {
            double g = (double)c[live[k]] / ((double)f[live[k]] + 0.5);
            if (g > gain) gain = g, best = live[k];
        }
        f[best]++;
        sum++;
    }
    while (sum > scale_total) {
        int best = -1;
        double loss = 0.0;
        for (int k = 0; k < nl; k++) {
            int s = live[k];
            if (f[s] <= 1) continue;
            double l = (double)c[s] / ((double)f[s] - 0.5);
            if (best < 0 || l < loss) loss = l, best = s;
        }
        f[best]--; /* some f > 1 exists: nl <= 256 < 2^p */
        sum--;
    }
}

/* Counts of the bit lengths [lo, hi] merged, for the used symbols. */
static void merge(const uint64_t count[RANS_FINE][256], int lo, int hi, const uint8_t *used,
                  int nused, uint64_t *c) {
    for (int k = 0; k < nused; k++) {
        uint64_t v = 0;
        for (int b = lo; b <= hi; b++) v += count[b][used[k]];
        c[used[k]] = v;
    }
}

int mpiucc_rans_model(const uint8_t *sym, size_t n, rans_model *m,
                      uint16_t freq[RANS_MAX_CTX][256]) {
    uint64_t count[RANS_FINE][256], c[256];
    fine_counts(sym, n, count);
    uint8_t used[256];
    int nused = 0;
    for (int s = 0; s < 256; s++) {
        uint64_t t = 0;
        for (int b = 0; b < RANS_FINE; b++) t += count[b][s];
        if (t) used[nused++] = (uint8_t)s;
    }
    if (nused == 1) return 1;

    /* Estimated bits of every range of bit lengths at each precision, computed on demand. */
    double memo[RANS_FINE][RANS_FINE][RANS_MAX_PROB - RANS_MIN_PROB + 1];
    for (int a = 0; a < RANS_FINE; a++)
        for (int b = 0; b < RANS_FINE; b++)
            for (int q = 0; q <= RANS_MAX_PROB - RANS_MIN_PROB; q++) memo[a][b][q] = -1.0;
    /* Small inputs cannot pay for more tables: try contexts from 4096 symbols up. */
    int max_ctx = n < 4096 ? 1 : RANS_MAX_CTX;
    double best = 0.0;
    rans_model bm = {1, 0, RANS_MAX_PROB};
    for (int nctx = 1; nctx <= max_ctx; nctx++) {
        int p = prob_bits_for(nctx);
        for (int shift = 0; shift < (nctx == 1 ? 1 : 4); shift++) {
            if (shift + nctx - 1 > RANS_FINE - 1) continue;
            double bits = 8.0 + 32.0 * RANS_LANES;
            for (int ctx = 0; ctx < nctx; ctx++) {
                int lo, hi;
                context_range(nctx, shift, ctx, &lo, &hi);
                double *e = &memo[lo][hi][p - RANS_MIN_PROB];
                if (*e < 0.0) {
                    merge(count, lo, hi, used, nused, c);
                    *e = context_bits(c, used, nused, p);
                }
                bits += *e;
            }
            if (nctx == 1 || bits < best) {
                best = bits;
                bm.nctx = nctx, bm.shift = shift, bm.prob_bits = p;
            }
        }
    }

    *m = bm;
    memset(freq, 0, sizeof(uint16_t) * RANS_MAX_CTX * 256);
    for (int ctx = 0; ctx < bm.nctx; ctx++) {
        int lo, hi;
        context_range(bm.nctx, bm.shift, ctx, &lo, &hi);
        merge(count, lo, hi, used, nused, c);
        normalize(c, used, nused, bm.prob_bits, freq[ctx]);
    }
    return nused;
}
