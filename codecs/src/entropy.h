/* entropy.h: the entropy stage of ebq's dense level: interleaved rANS over bytes, with an
 * optional context (the size of the previous 8 symbols) that picks one of up to 8 tables.
 *
 * Stream format (multi-byte fields little-endian; no alignment anywhere):
 *   byte 0      mode: 0 raw, 1 constant, 2 rANS; other values are invalid
 *   raw         n bytes: the symbols as they are (n = 0 always takes this mode)
 *   constant    1 byte: the one symbol, repeated n >= 1 times
 *   rANS        byte 1: bits 0-2 K - 1 (K contexts), bits 3-5 the context shift h,
 *                       bits 6-7 P - 12 (P = 12, 13 or 14 probability bits; K * 2^P <= 2^15)
 *               K frequency tables, one bit stream (LSB first) padded to a byte at the end;
 *               each table:
 *                 8 bits          used symbols minus 1
 *                 per used symbol, ascending:
 *                   1 bit         1: the symbol follows the previous one (never on the first)
 *                   [8 bits]      0: the symbol's value
 *                   [4 + k bits]  all but the last: b = bit length of the frequency f
 *                                 (1..P), then the k = b - 1 bits of f below its top bit;
 *                                 the last symbol's frequency is 2^P minus the others' sum
 *                                 and must be at least 1 (a table of one symbol: 2^P)
 *               then 16-bit words, then RANS_LANES initial decoder states, 4 bytes each,
 *               each in [2^16, 2^32), which end the stream.
 *
 * Symbols go in groups of RANS_LANES; symbol i is coded by lane i % RANS_LANES with the table
 * of its group's context: with S the sum of the previous group's symbols (0 for the first
 * group) and B the bit length of S (0 for S = 0), the context is min(K - 1, max(0, B - h)).
 * The decoder reads, for i = 0, 1, ..., n - 1 in order: s = the symbol whose frequency range
 * [cum[s], cum[s] + f[s]) holds slot = x mod 2^P; x = f[s] * (x >> P) + slot - cum[s]; then,
 * if x < 2^16, one word w: x = (x << 16) | w. A stream is valid only if this ends with the
 * last word consumed and every lane's state back at 2^16. The encoder writes the smallest of
 * the three modes and picks K, h and P by an estimate of the total size.
 */
#ifndef MPIUCC_ENTROPY_H
#define MPIUCC_ENTROPY_H

#include <stddef.h>
#include <stdint.h>

#include "mpiucc.h"

#define RANS_LANES 8    /* interleaved states; symbols go in groups of this many */
#define RANS_L 65536u   /* lower bound of a normalized state */
#define RANS_MAX_CTX 8  /* contexts (frequency tables) at most */
#define RANS_FINE 12    /* bit lengths of a group sum: 0..11 (a sum is at most 8 * 255) */
#define RANS_MIN_PROB 12
#define RANS_MAX_PROB 14

/* Largest encoded size of n symbols (the raw mode's size, n + 1); never overflows for
 * n < SIZE_MAX. */
size_t mpiucc_rans_bound(size_t n);

/* Encode the n symbols at sym into out (capacity cap bytes, any alignment). On MPIUCC_OK,
 * *size holds the stream's size. cap >= mpiucc_rans_bound(n) always suffices; a smaller cap
 * gives MPIUCC_ERR_CAPACITY when the stream does not fit. Returns MPIUCC_ERR_ARG for NULL
 * pointers (sym and out may be NULL when n = 0 and cap = 0 respectively). Deterministic:
 * the same symbols give the same bytes on every machine and SIMD level. Reentrant; uses
 * about 45 KiB of stack and no heap. */
mpiucc_status mpiucc_rans_encode(const uint8_t *sym, size_t n, uint8_t *out, size_t cap,
                                 size_t *size);

/* Decode exactly n symbols into sym from the stream of in_size bytes at in (n is not stored
 * in the stream: the caller knows it). Returns MPIUCC_ERR_TRUNCATED when the stream ends
 * early and MPIUCC_ERR_CORRUPT when it is inconsistent (bad mode, table or final states,
 * bytes left over); never reads outside in[0..in_size) nor writes outside sym[0..n), and
 * takes time linear in n + in_size. sym may be partly written on error. Reentrant; uses
 * about 43 KiB of stack and no heap. */
mpiucc_status mpiucc_rans_decode(const uint8_t *in, size_t in_size, uint8_t *sym, size_t n);

/* A decoder that hands out the symbols a chunk at a time (no heap; about 43 KiB). */
#define RANS_MAX_SUM (255 * RANS_LANES)
typedef struct {
    uint8_t slot[1u << 15];              /* context c's slot -> symbol at slot[c << P] */
    uint32_t info[RANS_MAX_CTX][256];    /* f | cum << 16 */
    uint8_t ctx_of_sum[RANS_MAX_SUM + 1]; /* context of a group whose previous group sums so */
} rans_dec_tables;
typedef struct {
    rans_dec_tables t;
    const uint8_t *in, *p, *words_end;
    size_t in_size, n, i; /* stream size, symbols in all, symbols decoded */
    uint32_t x[RANS_LANES];
    uint32_t ctx, group_sum;
    int mode, prob_bits;
} mpiucc_rans_decoder;

/* Parse the stream's mode and tables (the same checks as mpiucc_rans_decode up to the
 * symbols). */
mpiucc_status mpiucc_rans_decoder_init(mpiucc_rans_decoder *d, const uint8_t *in,
                                       size_t in_size, size_t n);
/* The next m symbols (m <= those left; a multiple of RANS_LANES keeps the fast path). Never
 * reads outside the stream nor writes outside sym[0..m). */
mpiucc_status mpiucc_rans_decoder_next(mpiucc_rans_decoder *d, uint8_t *sym, size_t m);
/* After all n symbols: whether the stream ended exactly (states back at 2^16, no bytes left). */
mpiucc_status mpiucc_rans_decoder_finish(const mpiucc_rans_decoder *d);

/* ---- shared by the rans*.c files ---- */

/* How contexts are formed and coded: K tables of 2^P slots, context shift h. */
typedef struct {
    int nctx;      /* K */
    int shift;     /* h */
    int prob_bits; /* P */
} rans_model;

/* Bit length of v (0 for 0). */
static inline unsigned rans_bit_length(uint32_t v) {
    return v ? 32u - (unsigned)__builtin_clz(v) : 0u;
}

/* Context of a group whose previous group's sum has bit length b. */
static inline unsigned rans_context(const rans_model *m, unsigned b) {
    unsigned c = b > (unsigned)m->shift ? b - (unsigned)m->shift : 0u;
    return c < (unsigned)m->nctx ? c : (unsigned)m->nctx - 1u;
}

/* Sum of the 8 bytes of w. */
static inline uint32_t rans_sum8(uint64_t w) {
    w = (w & 0x00ff00ff00ff00ffull) + ((w >> 8) & 0x00ff00ff00ff00ffull);
    w += w >> 16;
    w += w >> 32;
    return (uint32_t)(w & 0xffffu);
}

/* Choose the model for sym[0..n) (n >= RANS_LANES) and fill freq[c][s], the normalized
 * frequencies of context c (summing to 2^P, 0 for unused symbols). Returns the number of
 * distinct symbols of the whole input (1: the constant mode applies, freq is not filled). */
int mpiucc_rans_model(const uint8_t *sym, size_t n, rans_model *m,
                      uint16_t freq[RANS_MAX_CTX][256]);

#endif /* MPIUCC_ENTROPY_H */
