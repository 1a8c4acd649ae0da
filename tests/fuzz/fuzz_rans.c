/* Fuzz target: the rANS entropy stage of ebq's dense level, reached directly through its
 * private interface (codecs/src/entropy.h) so that the fuzzer need not build frames around it.
 * The input is (a) a stream to decode, its first two bytes giving the symbol count, and
 * (b) symbols to encode and decode back, which must give the same symbols and the same bytes
 * when encoded twice. */
#include "entropy.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode_arbitrary(const uint8_t *data, size_t size) {
    if (size < 2) return;
    size_t n = (size_t)(data[0] | data[1] << 8);
    uint8_t *in = (uint8_t *)malloc(size - 2 ? size - 2 : 1), *sym = (uint8_t *)malloc(n ? n : 1);
    FZ_ASSERT(in && sym);
    memcpy(in, data + 2, size - 2);
    memset(sym, FZ_SENTINEL, n);
    mpiucc_status st = mpiucc_rans_decode(in, size - 2, sym, n);
    FZ_ASSERT(st == MPIUCC_OK || st == MPIUCC_ERR_TRUNCATED || st == MPIUCC_ERR_CORRUPT);
    if (st == MPIUCC_OK) { /* a stream that decodes is re-encoded to a stream that decodes */
        size_t cap = mpiucc_rans_bound(n), sz = 0;
        uint8_t *re = (uint8_t *)malloc(cap), *back = (uint8_t *)malloc(n ? n : 1);
        FZ_ASSERT(re && back);
        FZ_ASSERT(mpiucc_rans_encode(sym, n, re, cap, &sz) == MPIUCC_OK && sz <= cap);
        FZ_ASSERT(mpiucc_rans_decode(re, sz, back, n) == MPIUCC_OK && !memcmp(sym, back, n));
        free(re);
        free(back);
    }
    free(in);
    free(sym);
}

static void round_trip(const uint8_t *data, size_t n) {
    size_t cap = mpiucc_rans_bound(n), s1 = 0, s2 = 0;
    FZ_ASSERT(cap >= n + 1);
    uint8_t *sym = (uint8_t *)malloc(n ? n : 1), *e1 = (uint8_t *)malloc(cap),
            *e2 = (uint8_t *)malloc(cap), *back = (uint8_t *)malloc(n ? n : 1);
    FZ_ASSERT(sym && e1 && e2 && back);
    if (n) memcpy(sym, data, n);
    FZ_ASSERT(mpiucc_rans_encode(sym, n, e1, cap, &s1) == MPIUCC_OK && s1 <= cap);
    FZ_ASSERT(mpiucc_rans_encode(sym, n, e2, cap, &s2) == MPIUCC_OK);
    FZ_ASSERT(s1 == s2 && !memcmp(e1, e2, s1));
    FZ_ASSERT(mpiucc_rans_decode(e1, s1, back, n) == MPIUCC_OK && !memcmp(sym, back, n));
    if (n) { /* one byte short is never accepted */
        mpiucc_status st = mpiucc_rans_decode(e1, s1 - 1, back, n);
        FZ_ASSERT(st == MPIUCC_ERR_TRUNCATED || st == MPIUCC_ERR_CORRUPT);
    }
    free(sym);
    free(e1);
    free(e2);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    decode_arbitrary(data, size);
    round_trip(data, size);
    return 0;
}
