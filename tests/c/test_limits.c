/* test_limits.c: hostile frames against the C API's limits, and what the library allocates.
 *
 * malloc is interposed (glibc, no sanitizer) to count the library's heap allocations:
 * decoding allocates nothing; dense encoding and a dense ebq_add allocate one scratch buffer of
 * count bytes; a frame whose header asks for more than dst_capacity is refused before any
 * allocation and before any work in proportion to its count. */
#include "internal.h"
#include "test_util.h"

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__clang__)
#define COUNT_MALLOC 1
extern void *__libc_malloc(size_t size);
static size_t n_malloc, max_malloc;
void *malloc(size_t size) {
    n_malloc++;
    if (size > max_malloc) max_malloc = size;
    return __libc_malloc(size);
}
static void reset_malloc(void) { n_malloc = max_malloc = 0; }
#define MALLOCS_AT_MOST(n, bytes) CHECK(n_malloc <= (n) && max_malloc <= (bytes))
#else
#define COUNT_MALLOC 0
static void reset_malloc(void) {}
#define MALLOCS_AT_MOST(n, bytes) ((void)0)
#endif

static uint32_t crc_bitwise(const uint8_t *p, size_t n) {
    uint32_t c = ~0u;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    }
    return ~c;
}

static void test_crc_tables(void) {
    CHECK(mpiucc_crc32c(0, "123456789", 9) == 0xe3069283u);
    uint8_t buf[300];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)tu_rand_u64();
    for (size_t n = 0; n <= sizeof buf; n += 7) CHECK(mpiucc_crc32c(0, buf, n) == crc_bitwise(buf, n));
    CHECK(mpiucc_crc32c(mpiucc_crc32c(0, buf, 100), buf + 100, 200) == crc_bitwise(buf, 300));
}

/* A valid dense frame of count zeros (f32): about 90 bytes whatever the count. Format v1:
 * a v2 or v3 frame of one segment of zeros has the v1 payload, so the version byte is all that changes (v2
 * needs 8 bytes per 2^20 elements: its count cannot grow without its payload). */
static size_t dense_zeros(uint64_t count, uint8_t *frame, size_t cap) {
    float x[64] = {0};
    mpiucc_params p = MPIUCC_PARAMS_INIT;
    p.error_bound = 1e-3;
    p.level = MPIUCC_LEVEL_DENSE;
    size_t size = 0;
    mpiucc_header h;
    CHECK_ST(mpiucc_compress(&p, x, 64, frame, cap, &size), MPIUCC_OK);
    mpiucc_put_u64(frame + 8, count);
    mpiucc_put_u32(frame + 60, mpiucc_crc32c(0, frame, 60));
    CHECK_ST(mpiucc_read_header(frame, size, &h), MPIUCC_ERR_CORRUPT); /* v2 */
    frame[4] = 1;
    mpiucc_put_u32(frame + 60, mpiucc_crc32c(0, frame, 60));
    return size;
}

static void test_hostile_counts(void) {
    uint8_t f[256], g[256], small[4096];
    uint64_t counts[] = {(uint64_t)1 << 26, (uint64_t)1 << 34, (uint64_t)1 << 59};
    for (int i = 0; i < 3; i++) {
        size_t fs = dense_zeros(counts[i], f, sizeof f);
        CHECK(fs <= 90);
        mpiucc_header h;
        CHECK_ST(mpiucc_read_header(f, fs, &h), MPIUCC_OK);
        CHECK(h.count == counts[i]);
        size_t gs = dense_zeros(counts[i], g, sizeof g), out = 0;
        reset_malloc();
        CHECK_ST(mpiucc_decompress(f, fs, small, sizeof small, NULL), MPIUCC_ERR_CAPACITY);
        CHECK_ST(mpiucc_decompress_add(f, fs, small, sizeof small, NULL), MPIUCC_ERR_CAPACITY);
        /* the sum of two such frames: refused for want of room, at once, with no scratch */
        CHECK_ST(mpiucc_ebq_add(f, fs, g, gs, small, sizeof small, &out), MPIUCC_ERR_CAPACITY);
        MALLOCS_AT_MOST(0, 0);
        CHECK(mpiucc_ebq_add_bound(f, fs, g, gs) > counts[i] || counts[i] > (SIZE_MAX >> 8));
        /* counts that differ */
        gs = dense_zeros(counts[i] - 1, g, sizeof g);
        CHECK(mpiucc_ebq_add_bound(f, fs, g, gs) == 0);
        CHECK_ST(mpiucc_ebq_add(f, fs, g, gs, small, sizeof small, &out), MPIUCC_ERR_MISMATCH);
    }
}

static void test_allocations(void) {
    enum { N = 100000 };
    static float x[N], y[N];
    static uint8_t frame[8 * N], sum[8 * N];
    for (size_t i = 0; i < N; i++) x[i] = (float)tu_rand_normal() * (1.0f + (float)(i % 300));
    mpiucc_params p = MPIUCC_PARAMS_INIT;
    p.error_bound = 1e-2;
    p.level = MPIUCC_LEVEL_DENSE;
    size_t fs = 0, ss = 0;
    reset_malloc();
    CHECK_ST(mpiucc_compress(&p, x, N, frame, sizeof frame, &fs), MPIUCC_OK);
    MALLOCS_AT_MOST(1, (size_t)N); /* the symbols' scratch */
    reset_malloc();
    CHECK_ST(mpiucc_decompress(frame, fs, y, sizeof y, NULL), MPIUCC_OK);
    CHECK_ST(mpiucc_decompress_add(frame, fs, y, sizeof y, NULL), MPIUCC_OK);
    MALLOCS_AT_MOST(0, 0); /* decoding never allocates */
    /* with the caller's scratch (one pass): the same output, and still no allocation */
    static float y2[N];
    static uint8_t scratch[N];
    mpiucc_header h;
    CHECK_ST(mpiucc_read_header(frame, fs, &h), MPIUCC_OK);
    CHECK(mpiucc_decompress_scratch_size(&h) == N);
    reset_malloc();
    CHECK_ST(mpiucc_decompress(frame, fs, y, sizeof y, NULL), MPIUCC_OK);
    CHECK_ST(mpiucc_decompress_scratch(frame, fs, y2, sizeof y2, scratch, N, 0, NULL), MPIUCC_OK);
    CHECK(!memcmp(y, y2, sizeof y));
    CHECK_ST(mpiucc_decompress_scratch(frame, fs, y2, sizeof y2, scratch, N, 1, NULL), MPIUCC_OK);
    CHECK_ST(mpiucc_decompress_scratch(frame, fs, y2, sizeof y2, scratch, N - 1, 1, NULL),
             MPIUCC_OK); /* too small: the two-pass path */
    for (size_t i = 0; i < N; i++) CHECK(y2[i] == 3 * y[i] || !(fabsf(y2[i] - 3 * y[i]) > 0));
    CHECK_ST(mpiucc_decompress_scratch(frame, fs, y2, sizeof y2, scratch, N, 2, NULL),
             MPIUCC_ERR_ARG);
    MALLOCS_AT_MOST(0, 0);
    /* a damaged rANS stream (its last state below 2^16): refused on both paths, the output
     * untouched */
    uint8_t *rans_end = frame + MPIUCC_HEADER_SIZE + 24 + mpiucc_get_u64(frame + 72) +
                        mpiucc_get_u64(frame + 80);
    CHECK(rans_end[-2] || rans_end[-1]);
    uint8_t saved[2] = {rans_end[-2], rans_end[-1]};
    rans_end[-2] = rans_end[-1] = 0;
    memcpy(y2, y, sizeof y);
    CHECK(mpiucc_decompress_scratch(frame, fs, y2, sizeof y2, scratch, N, 0, NULL) != MPIUCC_OK);
    CHECK(mpiucc_decompress(frame, fs, y2, sizeof y2, NULL) != MPIUCC_OK);
    CHECK(!memcmp(y, y2, sizeof y));
    rans_end[-2] = saved[0], rans_end[-1] = saved[1];
    reset_malloc();
    CHECK_ST(mpiucc_ebq_add(frame, fs, frame, fs, sum, sizeof sum, &ss), MPIUCC_OK);
    MALLOCS_AT_MOST(1, (size_t)N);
    /* a dense sum needs count bytes of room (its scratch comes within dst_capacity) */
    CHECK_ST(mpiucc_ebq_add(frame, fs, frame, fs, sum, MPIUCC_HEADER_SIZE + N - 1, &ss),
             MPIUCC_ERR_CAPACITY);
    CHECK(strcmp(mpiucc_status_string(MPIUCC_ERR_NOMEM), "out of memory") == 0);
    if (!COUNT_MALLOC) printf("test_limits: malloc not interposed in this build\n");
}

int main(void) {
    test_crc_tables();
    test_hostile_counts();
    test_allocations();
    return tu_report("test_limits");
}
