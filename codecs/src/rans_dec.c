/* rANS decoder: stream parsing and validation, interleaved table-driven decoding (entropy.h). */
#include "entropy.h"
#include "internal.h"

#define PROB_SCALE (1u << RANS_PROB_BITS)
#define PROB_MASK (PROB_SCALE - 1)

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

/* Parse and validate the frequency table at *pp: fill slot -> symbol and symbol -> (f, cum),
 * and advance *pp past the table. */
static mpiucc_status read_table(const uint8_t **pp, const uint8_t *end, uint8_t *slot_sym,
                                uint32_t info[256]) {
    bit_reader r = {*pp, end, 0, 0, 0};
    int nused = (int)get_bits(&r, 8) + 1;
    if (r.overrun) return MPIUCC_ERR_TRUNCATED;
    if (nused < 2) return MPIUCC_ERR_CORRUPT;
    int prev = -1;
    uint32_t cum = 0;
    for (int k = 0; k < nused; k++) {
        int s;
        if (get_bits(&r, 1)) {
            if (k == 0 || prev == 255) return MPIUCC_ERR_CORRUPT;
            s = prev + 1;
        } else {
            s = (int)get_bits(&r, 8);
            if (s <= prev && !r.overrun) return MPIUCC_ERR_CORRUPT;
        }
        uint32_t f;
        if (k + 1 < nused) {
            int b = (int)get_bits(&r, 4);
            if (r.overrun) return MPIUCC_ERR_TRUNCATED;
            if (b < 1 || b > RANS_PROB_BITS) return MPIUCC_ERR_CORRUPT;
            f = (1u << (b - 1)) | get_bits(&r, b - 1);
            if (cum + f >= PROB_SCALE && !r.overrun) return MPIUCC_ERR_CORRUPT;
        } else {
            f = PROB_SCALE - cum;
        }
        if (r.overrun) return MPIUCC_ERR_TRUNCATED;
        memset(slot_sym + cum, s, f);
        info[s] = f | cum << 16;
        cum += f;
        prev = s;
    }
    *pp = r.p; /* the padding bits of the last byte are ignored */
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

/* Decode one symbol of lane state x into out, then refill x from the words at p when it fell
 * below RANS_L. The word is loaded whether or not it is used (the caller guarantees two
 * readable bytes), so that no branch depends on the data. */
#define RANS_DEC_STEP(x, out)                                           \
    do {                                                                \
        uint32_t slot_ = (x) & PROB_MASK;                               \
        uint32_t s_ = slot_sym[slot_];                                  \
        uint32_t e_ = info[s_];                                         \
        (x) = (e_ & 0xffffu) * ((x) >> RANS_PROB_BITS) + slot_ - (e_ >> 16); \
        (out) = (uint8_t)s_;                                            \
        uint32_t w_ = get_u16(p);                                       \
        uint32_t small_ = (x) < RANS_L;                                 \
        (x) = (x) << (small_ << 4) | (w_ & (0u - small_));               \
        p += 2 * small_;                                                \
    } while (0)

static mpiucc_status decode_lanes(const uint8_t *slot_sym, const uint32_t info[256],
                                  const uint8_t *p, const uint8_t *end, uint32_t x[RANS_LANES],
                                  uint8_t *sym, size_t n) {
    uint32_t x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
    uint32_t x4 = x[4], x5 = x[5], x6 = x[6], x7 = x[7];
    size_t i = 0;
    for (; n - i >= RANS_LANES && (size_t)(end - p) >= 2 * RANS_LANES; i += RANS_LANES) {
        RANS_DEC_STEP(x0, sym[i]);
        RANS_DEC_STEP(x1, sym[i + 1]);
        RANS_DEC_STEP(x2, sym[i + 2]);
        RANS_DEC_STEP(x3, sym[i + 3]);
        RANS_DEC_STEP(x4, sym[i + 4]);
        RANS_DEC_STEP(x5, sym[i + 5]);
        RANS_DEC_STEP(x6, sym[i + 6]);
        RANS_DEC_STEP(x7, sym[i + 7]);
    }
    x[0] = x0, x[1] = x1, x[2] = x2, x[3] = x3, x[4] = x4, x[5] = x5, x[6] = x6, x[7] = x7;
    /* The last symbols, or all of them near the end of the words: check every read. */
    for (; i < n; i++) {
        uint32_t *xl = &x[i % RANS_LANES];
        uint32_t slot = *xl & PROB_MASK, s = slot_sym[slot], e = info[s];
        *xl = (e & 0xffffu) * (*xl >> RANS_PROB_BITS) + slot - (e >> 16);
        sym[i] = (uint8_t)s;
        if (*xl < RANS_L) {
            if (end - p < 2) return MPIUCC_ERR_TRUNCATED;
            *xl = *xl << 16 | get_u16(p);
            p += 2;
        }
    }
    if (p != end) return MPIUCC_ERR_CORRUPT;
    for (int l = 0; l < RANS_LANES; l++)
        if (x[l] != RANS_L) return MPIUCC_ERR_CORRUPT;
    return MPIUCC_OK;
}

mpiucc_status mpiucc_rans_decode(const uint8_t *in, size_t in_size, uint8_t *sym, size_t n) {
    if ((!in && in_size) || (!sym && n)) return MPIUCC_ERR_ARG;
    if (in_size < 1) return MPIUCC_ERR_TRUNCATED;
    const uint8_t *end = in + in_size, *p = in + 1;
    switch (in[0]) {
    case 0:
        if (in_size - 1 < n) return MPIUCC_ERR_TRUNCATED;
        if (in_size - 1 > n) return MPIUCC_ERR_CORRUPT;
        if (n) memcpy(sym, p, n);
        return MPIUCC_OK;
    case 1:
        if (in_size < 2) return MPIUCC_ERR_TRUNCATED;
        if (in_size > 2 || n == 0) return MPIUCC_ERR_CORRUPT;
        memset(sym, in[1], n);
        return MPIUCC_OK;
    case 2:
        break;
    default:
        return MPIUCC_ERR_CORRUPT;
    }

    uint8_t slot_sym[PROB_SCALE];
    uint32_t info[256];
    mpiucc_status st = read_table(&p, end, slot_sym, info);
    if (st != MPIUCC_OK) return st;
    if ((size_t)(end - p) < 4 * RANS_LANES) return MPIUCC_ERR_TRUNCATED;
    uint32_t x[RANS_LANES];
    for (int l = 0; l < RANS_LANES; l++) {
        x[l] = mpiucc_get_u32(p + 4 * l);
        if (x[l] < RANS_L) return MPIUCC_ERR_CORRUPT;
    }
    p += 4 * RANS_LANES;
    return decode_lanes(slot_sym, info, p, end, x, sym, n);
}
