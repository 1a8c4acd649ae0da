/* Tests of the rANS entropy stage (codecs/src/entropy.h): round trips, ratio against the
 * empirical entropy, capacity handling, and robustness against truncated and corrupt input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entropy.h"
#include "internal.h"

#define FROZEN_HASH 0x6505315d30439a97ull

static int failures;
#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        if (!(cond)) {                                                   \
            failures++;                                                  \
            fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                \
            fputc('\n', stderr);                                         \
        }                                                                \
    } while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void) { /* xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}
static double next_unit(void) { return ((double)(next_u64() >> 11) + 0.5) / 9007199254740992.0; }

/* Geometric symbols: P(k) = p0 (1 - p0)^k, clamped to 255 (the escape). */
static void fill_geometric(uint8_t *s, size_t n, double p0) {
    double lq = log(1.0 - p0);
    for (size_t i = 0; i < n; i++) {
        double k = floor(log(next_unit()) / lq);
        s[i] = (uint8_t)(k > 255.0 ? 255.0 : k);
    }
}

static double entropy_bits(const uint8_t *s, size_t n) { /* total order-0 bits */
    double c[256] = {0}, h = 0.0;
    for (size_t i = 0; i < n; i++) c[s[i]]++;
    for (int k = 0; k < 256; k++)
        if (c[k] > 0) h -= c[k] * log2(c[k] / (double)n);
    return h;
}

/* Encode and decode s through unaligned buffers of exact sizes; returns the encoded size. */
static size_t round_trip(const uint8_t *s, size_t n, const char *what) {
    size_t bound = mpiucc_rans_bound(n), size = 0;
    uint8_t *outbuf = malloc(bound + 1), *dec = malloc(n + 1);
    uint8_t *out = outbuf + 1;
    mpiucc_status st = mpiucc_rans_encode(s, n, out, bound, &size);
    CHECK(st == MPIUCC_OK, "%s: encode n=%zu: status %d", what, n, (int)st);
    CHECK(size >= 1 && size <= bound, "%s: n=%zu size %zu bound %zu", what, n, size, bound);
    if (st == MPIUCC_OK) {
        /* From the unaligned buffer, then from an exact-size copy (ASan sees overreads). */
        st = mpiucc_rans_decode(out, size, dec + 1, n);
        CHECK(st == MPIUCC_OK, "%s: decode n=%zu: status %d", what, n, (int)st);
        CHECK(n == 0 || memcmp(dec + 1, s, n) == 0, "%s: n=%zu: symbols differ", what, n);
        uint8_t *copy = malloc(size), *again = malloc(size);
        memcpy(copy, out, size);
        memset(dec, 0xAA, n + 1);
        st = mpiucc_rans_decode(copy, size, dec + 1, n);
        CHECK(st == MPIUCC_OK && (n == 0 || memcmp(dec + 1, s, n) == 0),
              "%s: decode of the copy n=%zu: status %d", what, n, (int)st);
        /* Same bytes again into exactly the room needed; one byte less fails cleanly. */
        size_t size2 = 0;
        st = mpiucc_rans_encode(s, n, again, size, &size2);
        CHECK(st == MPIUCC_OK && size2 == size && memcmp(again, out, size) == 0,
              "%s: n=%zu: re-encode into exact capacity differs", what, n);
        st = mpiucc_rans_encode(s, n, again, size - 1, &size2);
        CHECK(st == MPIUCC_ERR_CAPACITY, "%s: n=%zu: short capacity gave %d", what, n, (int)st);
        free(copy);
        free(again);
    }
    free(outbuf);
    free(dec);
    return size;
}

static void test_small_counts(void) {
    static const size_t ns[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 64, 100, 1000, 4097};
    uint8_t s[5000];
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        fill_geometric(s, ns[k], 0.7);
        round_trip(s, ns[k], "geometric small");
        for (size_t i = 0; i < ns[k]; i++) s[i] = (uint8_t)(i * 37 + 11);
        round_trip(s, ns[k], "spread small");
    }
    CHECK(mpiucc_rans_bound(0) == 1, "bound(0)");
    /* n = 0 with NULL pointers and no room at all */
    size_t size = 7;
    CHECK(mpiucc_rans_encode(NULL, 0, NULL, 0, &size) == MPIUCC_ERR_CAPACITY, "n=0 cap=0");
    uint8_t one = 0;
    CHECK(mpiucc_rans_encode(NULL, 0, &one, 1, &size) == MPIUCC_OK && size == 1, "n=0");
    CHECK(mpiucc_rans_decode(&one, 1, NULL, 0) == MPIUCC_OK, "decode n=0");
    CHECK(mpiucc_rans_decode(&one, 0, NULL, 0) == MPIUCC_ERR_TRUNCATED, "decode empty");
    CHECK(mpiucc_rans_encode(NULL, 5, &one, 1, &size) == MPIUCC_ERR_ARG, "NULL sym");
    CHECK(mpiucc_rans_encode(&one, 1, &one, 1, NULL) == MPIUCC_ERR_ARG, "NULL size");
}

static void test_constant_and_uniform(void) {
    size_t n = 100000;
    uint8_t *s = malloc(n);
    for (int v = 0; v < 256; v += 85) {
        memset(s, v, n);
        size_t size = round_trip(s, n, "one symbol");
        CHECK(size == 2, "one symbol %d: size %zu", v, size);
    }
    for (size_t i = 0; i < n; i++) s[i] = (uint8_t)i; /* every symbol equally often */
    CHECK(round_trip(s, n, "uniform 256") <= n + 1, "uniform: larger than raw");
    for (size_t i = 0; i < n; i++) s[i] = (uint8_t)next_u64();
    CHECK(round_trip(s, n, "random bytes") == n + 1, "random bytes: raw expected");
    for (size_t i = 0; i < n; i++) s[i] = (uint8_t)(next_u64() & 15); /* 4 bits each */
    size_t size = round_trip(s, n, "16 symbols");
    CHECK(size < n / 2 + n / 100, "16 uniform symbols: %zu bytes", size);
    free(s);
}

/* Ratio: within 1% of the order-0 entropy plus the table, the states and a few words. */
static void test_ratio(void) {
    static const double p0s[] = {0.3, 0.6, 0.8, 0.9, 0.97, 0.995};
    size_t n = (size_t)1 << 20;
    uint8_t *s = malloc(n);
    for (size_t k = 0; k < sizeof p0s / sizeof p0s[0]; k++) {
        fill_geometric(s, n, p0s[k]);
        for (size_t i = 0; i < n; i += 997) s[i] = 255; /* escapes */
        double h = entropy_bits(s, n) / 8.0;
        size_t size = round_trip(s, n, "geometric 1M");
        CHECK((double)size <= 1.01 * h + 200.0, "p0=%.3f: %zu bytes, entropy %.0f", p0s[k], size,
              h);
    }
    /* Two symbols, one of them rare; and long runs of zeros. */
    for (size_t i = 0; i < n; i++) s[i] = next_u64() % 1000 == 0;
    double h = entropy_bits(s, n) / 8.0;
    size_t size = round_trip(s, n, "rare ones");
    CHECK((double)size <= 1.01 * h + 100.0, "rare ones: %zu bytes, entropy %.0f", size, h);
    memset(s, 0, n);
    for (size_t i = 0; i < n; i += 100000) fill_geometric(s + i, 5000, 0.5);
    h = entropy_bits(s, n) / 8.0;
    size = round_trip(s, n, "zero runs");
    CHECK((double)size <= 1.01 * h + 200.0, "zero runs: %zu bytes, entropy %.0f", size, h);
    free(s);
}

/* Symbols whose size depends on their neighbourhood, as in gradients: blocks of 512 with
 * scales spread over two decades. The context tables must pay off against order-0. */
static void fill_clustered(uint8_t *s, size_t n) {
    for (size_t i = 0; i < n; i += 512) {
        double p0 = 1.0 - pow(10.0, -2.0 * next_unit()); /* 0 .. 0.99 */
        fill_geometric(s + i, n - i < 512 ? n - i : 512, p0 < 0.05 ? 0.05 : p0);
    }
}

static void test_contexts(void) {
    size_t n = (size_t)1 << 18, size = 0;
    uint8_t *s = malloc(n), *enc = malloc(n + 1);
    fill_clustered(s, n);
    double h = entropy_bits(s, n) / 8.0;
    size = round_trip(s, n, "clustered");
    CHECK((double)size < 0.9 * h, "clustered: %zu bytes, order-0 entropy %.0f", size, h);
    CHECK(mpiucc_rans_encode(s, n, enc, n + 1, &size) == MPIUCC_OK && enc[0] == 2 &&
              (enc[1] & 7) > 0,
          "clustered: contexts expected (mode %d, byte %d)", enc[0], enc[1]);
    /* Zero groups, and groups of fives that are always followed by a zero group: the
     * context after a group of fives holds a single symbol (a table of one). */
    memset(s, 0, n);
    for (size_t g = 0; g + 2 <= n / RANS_LANES; g++)
        if (next_u64() % 4 == 0) memset(s + RANS_LANES * g++, 5, RANS_LANES);
    for (size_t i = 0; i < n; i += 1000) s[i] = (uint8_t)(1 + next_u64() % 3);
    round_trip(s, n, "single-symbol context");
    /* Every length near a multiple of the group size. */
    for (size_t m = 4090; m < 4110; m++) round_trip(s + 3, m, "clustered lengths");
    free(enc);
    free(s);
}

/* Every prefix of a stream and many corrupted copies must decode to an error or to n
 * symbols, without reading or writing out of bounds (ASan checks the bounds). */
static void corrupt_stream(const uint8_t *enc, size_t size, size_t n, int trials) {
    uint8_t *t = malloc(size), *dec = malloc(n);
    int detected = 0;
    for (size_t k = 0; k < size; k++) { /* every prefix, in a buffer of exactly k bytes */
        uint8_t *pre = malloc(k ? k : 1);
        memcpy(pre, enc, k);
        mpiucc_status st = mpiucc_rans_decode(pre, k, dec, n);
        CHECK(st == MPIUCC_ERR_TRUNCATED || st == MPIUCC_ERR_CORRUPT, "prefix %zu: %d", k,
              (int)st);
        free(pre);
    }
    for (int trial = 0; trial < trials; trial++) {
        memcpy(t, enc, size);
        int flips = 1 + (int)(next_u64() % 4);
        for (int f = 0; f < flips; f++) t[next_u64() % size] ^= (uint8_t)(1 + next_u64() % 255);
        mpiucc_status st = mpiucc_rans_decode(t, size, dec, n);
        CHECK(st == MPIUCC_OK || st == MPIUCC_ERR_TRUNCATED || st == MPIUCC_ERR_CORRUPT,
              "corruption: %d", (int)st);
        detected += st != MPIUCC_OK;
    }
    CHECK(detected > trials * 9 / 10, "only %d of %d corruptions detected", detected, trials);
    CHECK(mpiucc_rans_decode(enc, size, dec, n - 1) != MPIUCC_OK, "n - 1 accepted");
    CHECK(mpiucc_rans_decode(enc, size, dec, n - 8) != MPIUCC_OK, "n - 8 accepted");
    free(t);
    free(dec);
}

/* Every prefix of a stream and many corrupted copies must decode to an error or to n
 * symbols, without reading or writing out of bounds (ASan checks the bounds). */
static void test_robustness(void) {
    size_t n = 3000, size = 0;
    uint8_t s[3000], enc[3001];
    fill_geometric(s, n, 0.8);
    CHECK(mpiucc_rans_encode(s, n, enc, sizeof enc, &size) == MPIUCC_OK && enc[0] == 2,
          "robustness stream");
    corrupt_stream(enc, size, n, 3000);

    size_t m = 12000;
    uint8_t *c = malloc(m), *cenc = malloc(m + 1);
    fill_clustered(c, m);
    CHECK(mpiucc_rans_encode(c, m, cenc, m + 1, &size) == MPIUCC_OK && (cenc[1] & 7) > 0,
          "robustness stream with contexts");
    corrupt_stream(cenc, size, m, 2000);

    /* Header byte 1: P = 15 does not exist; 8 contexts need P = 12. */
    uint8_t save = cenc[1];
    cenc[1] = (uint8_t)(save | 0xC0);
    CHECK(mpiucc_rans_decode(cenc, size, c, m) == MPIUCC_ERR_CORRUPT, "P = 15 accepted");
    cenc[1] = 0x87; /* K = 8, P = 14 */
    CHECK(mpiucc_rans_decode(cenc, size, c, m) == MPIUCC_ERR_CORRUPT, "K = 8, P = 14 accepted");
    cenc[1] = save;
    free(c);
    free(cenc);

    /* Random garbage behind each mode byte, for any n. */
    uint8_t t[256], *dec = malloc(300);
    for (int trial = 0; trial < 5000; trial++) {
        size_t len = 1 + next_u64() % 200;
        for (size_t i = 0; i < len; i++) t[i] = (uint8_t)next_u64();
        t[0] = (uint8_t)(next_u64() % 4);
        size_t k = next_u64() % 300;
        mpiucc_status st = mpiucc_rans_decode(t, len, dec, k);
        CHECK(st == MPIUCC_OK || st == MPIUCC_ERR_TRUNCATED || st == MPIUCC_ERR_CORRUPT,
              "garbage: %d", (int)st);
    }
    free(dec);
}

/* The encoded bytes of a fixed input, from integer arithmetic only: a change of the stream
 * format or of the encoder's choices shows up here (update the hash only on purpose). */
static void test_frozen(void) {
    size_t n = 50000, size = 0;
    uint8_t *s = malloc(n), *enc = malloc(n + 1);
    uint64_t r = 1;
    int level = 0;
    for (size_t i = 0; i < n; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        if (i % 512 == 0) level = (int)(r >> 61);  /* 0..7: one in 2^level is nonzero */
        uint64_t u = r >> 20;
        int nz = ((u >> 30) & ((1u << level) - 1)) == 0;
        s[i] = nz ? (uint8_t)(1 + __builtin_ctzll(u | (1ull << 12))) : 0;
        if (i % 4099 == 0) s[i] = 255;
    }
    CHECK(mpiucc_rans_encode(s, n, enc, n + 1, &size) == MPIUCC_OK, "frozen: encode");
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < size; i++) h = (h ^ enc[i]) * 1099511628211ull;
    printf("frozen stream: %zu bytes, mode %d, byte 1 0x%02x, hash %016llx\n", size, enc[0],
           enc[1], (unsigned long long)h);
    CHECK(h == FROZEN_HASH, "frozen stream changed: hash %016llx", (unsigned long long)h);
    round_trip(s, n, "frozen");
    free(s);
    free(enc);
}

int main(void) {
    test_small_counts();
    test_constant_and_uniform();
    test_ratio();
    test_contexts();
    test_robustness();
    test_frozen();
    if (failures) {
        fprintf(stderr, "test_rans: %d failures\n", failures);
        return 1;
    }
    puts("test_rans: ok");
    return 0;
}
