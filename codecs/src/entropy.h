/* entropy.h: the entropy stage of ebq's dense level, an order-0 byte coder (interleaved rANS).
 *
 * Stream format (every multi-byte field little-endian; no alignment anywhere):
 *   byte 0      mode: 0 raw, 1 constant, 2 rANS; bits 2..7 reserved, zero
 *   raw         n bytes: the symbols as they are (n = 0 always takes this mode)
 *   constant    1 byte: the one symbol, repeated n >= 1 times
 *   rANS        the frequency table, bit-packed (LSB first) and padded to a byte:
 *                 8 bits          used symbols minus 1 (at least 2 are used)
 *                 per used symbol, ascending:
 *                   1 bit         1: the symbol follows the previous one (never on the first)
 *                   [8 bits]      0: the symbol's value
 *                   [4 + k bits]  all but the last: b = bit length of the frequency f
 *                                 (1..RANS_PROB_BITS), then the k = b - 1 bits of f below its top
 *                                 bit; the last symbol's frequency is 2^RANS_PROB_BITS minus the
 *                                 others' sum and must be at least 1
 *               then RANS_LANES initial decoder states, 4 bytes each, each in [2^16, 2^32),
 *               then 16-bit words up to the end of the stream.
 *
 * Symbol i is coded by lane i % RANS_LANES; the lanes share one word stream. The decoder
 * reads, for i = 0, 1, ..., n - 1 in order: s = the symbol of slot x mod 2^RANS_PROB_BITS,
 * x = f[s] * (x >> RANS_PROB_BITS) + slot - cum[s], and then, if x < 2^16, one word w:
 * x = (x << 16) | w. A stream is valid only when this ends with every lane's state back at
 * 2^16 and the last word consumed. The encoder writes the smallest of the three modes.
 */
#ifndef MPIUCC_ENTROPY_H
#define MPIUCC_ENTROPY_H

#include <stddef.h>
#include <stdint.h>

#include "mpiucc.h"

#define RANS_PROB_BITS 14 /* frequencies sum to 2^RANS_PROB_BITS */
#define RANS_LANES 8      /* interleaved states */
#define RANS_L 65536u     /* lower bound of a normalized state */

/* Largest encoded size of n symbols (the raw mode's size, n + 1); never overflows for
 * n < SIZE_MAX. */
size_t mpiucc_rans_bound(size_t n);

/* Encode the n symbols at sym into out (capacity cap bytes, any alignment). On MPIUCC_OK,
 * *size holds the stream's size. cap >= mpiucc_rans_bound(n) always suffices; a smaller cap
 * gives MPIUCC_ERR_CAPACITY when the stream does not fit. Returns MPIUCC_ERR_ARG for NULL
 * pointers (sym and out may be NULL when n = 0 and cap = 0 respectively). Deterministic:
 * the same symbols give the same bytes on every machine and SIMD level. Reentrant; uses
 * about 12 KiB of stack and no heap. */
mpiucc_status mpiucc_rans_encode(const uint8_t *sym, size_t n, uint8_t *out, size_t cap,
                                 size_t *size);

/* Decode exactly n symbols into sym from the stream of in_size bytes at in (n is not stored
 * in the stream: the caller knows it). Returns MPIUCC_ERR_TRUNCATED when the stream ends
 * early and MPIUCC_ERR_CORRUPT when it is inconsistent (bad mode, table or final states,
 * bytes left over); never reads outside in[0..in_size) nor writes outside sym[0..n), and
 * takes time linear in n + in_size. sym may be partly written on error. Reentrant; uses
 * about 20 KiB of stack and no heap. */
mpiucc_status mpiucc_rans_decode(const uint8_t *in, size_t in_size, uint8_t *sym, size_t n);

#endif /* MPIUCC_ENTROPY_H */
