/* test_frame.c: the frame layer against damaged input. Every truncation and many random
 * byte and bit corruptions of valid frames (header and payload), and headers that lie with a
 * correct checksum, give an error status or (payload bytes without checksum) a successful
 * decode: never a crash nor an access out of bounds (buffers are allocated to their exact
 * size, so a sanitizer build catches any overrun). With MPIUCC_FLAG_PAYLOAD_CHECKSUM every
 * payload corruption is detected. Also the raw codec's round trip. */
#include <float.h>

#include "internal.h" /* little-endian helpers */
#include "test_util.h"

#define N 300

typedef struct {
    uint8_t *data;
    size_t size;
    size_t count;
    size_t es;
    int checksum;
    size_t sub; /* ebq sub-header size (0 for raw): every change there is an error */
} frame;

static frame make_frame(const mpiucc_params *p, const void *x, size_t n) {
    frame f = {NULL, 0, n, mpiucc_dtype_size((mpiucc_dtype)p->dtype),
               (p->flags & MPIUCC_FLAG_PAYLOAD_CHECKSUM) != 0,
               p->codec != MPIUCC_CODEC_EBQ ? 0 : p->level ? 24 : 16};
    size_t cap = mpiucc_compress_bound(p, n);
    CHECK(cap > 0);
    f.data = malloc(cap);
    CHECK_ST(mpiucc_compress(p, x, n, f.data, cap, &f.size), MPIUCC_OK);
    return f;
}

/* Decode damaged bytes (copied to an exact-size buffer) every way there is. Returns the
 * status of mpiucc_decompress. */
static mpiucc_status try_decode(const uint8_t *bytes, size_t size, const frame *good) {
    uint8_t *copy = malloc(size ? size : 1);
    if (size) memcpy(copy, bytes, size);
    mpiucc_header h;
    mpiucc_status hs = mpiucc_read_header(copy, size, &h);
    size_t count = hs == MPIUCC_OK && h.count < (1u << 20) ? (size_t)h.count : good->count;
    size_t es = hs == MPIUCC_OK ? mpiucc_dtype_size((mpiucc_dtype)h.dtype) : good->es;
    void *dst = malloc(count ? count * es : 1);
    memset(dst, 0, count * es);
    size_t got = 0;
    mpiucc_status st = mpiucc_decompress(copy, size, dst, count * es, &got);
    CHECK(hs == MPIUCC_OK || st == hs);
    mpiucc_status st2 = mpiucc_decompress_add(copy, size, dst, count * es, &got);
    CHECK(st2 == st);
    if (st == MPIUCC_OK) CHECK(got == count);
    /* ebq_add reads both frames completely too */
    size_t bound = mpiucc_ebq_add_bound(copy, size, good->data, good->size);
    if (bound && bound < (1u << 24)) {
        uint8_t *sum = malloc(bound);
        size_t ssize;
        mpiucc_status sa = mpiucc_ebq_add(copy, size, good->data, good->size, sum, bound, &ssize);
        if (st != MPIUCC_OK) CHECK(sa != MPIUCC_OK);
        if (sa == MPIUCC_OK) {
            mpiucc_header hs2;
            CHECK_ST(mpiucc_read_header(sum, ssize, &hs2), MPIUCC_OK);
            CHECK(ssize <= bound);
        }
        free(sum);
    }
    free(dst);
    free(copy);
    return st;
}

static void damage(const frame *f) {
    uint8_t *buf = malloc(f->size);
    /* every truncation */
    for (size_t len = 0; len < f->size; len++) {
        mpiucc_status st = try_decode(f->data, len, f);
        CHECK(st != MPIUCC_OK);
        CHECK(len < 4 || len >= MPIUCC_HEADER_SIZE || st == MPIUCC_ERR_TRUNCATED);
    }
    CHECK_ST(try_decode(f->data, f->size, f), MPIUCC_OK);
    /* single bytes and single bits */
    for (int t = 0; t < 4000; t++) {
        memcpy(buf, f->data, f->size);
        size_t at = (size_t)(tu_rand_u64() % f->size);
        if (t % 2) buf[at] ^= (uint8_t)(1u << (tu_rand_u64() % 8));
        else buf[at] = (uint8_t)(buf[at] + 1 + tu_rand_u64() % 255);
        mpiucc_status st = try_decode(buf, f->size, f);
        if (at < MPIUCC_HEADER_SIZE) CHECK(st != MPIUCC_OK);
        else if (f->checksum) CHECK_ST(st, MPIUCC_ERR_PAYLOAD_CHECKSUM);
    }
    /* a few bytes at once in the payload */
    for (int t = 0; t < 1000 && f->size > MPIUCC_HEADER_SIZE; t++) {
        memcpy(buf, f->data, f->size);
        for (int k = 0; k < 4; k++)
            buf[MPIUCC_HEADER_SIZE + tu_rand_u64() % (f->size - MPIUCC_HEADER_SIZE)] =
                (uint8_t)tu_rand_u64();
        mpiucc_status st = try_decode(buf, f->size, f);
        if (f->checksum && memcmp(buf, f->data, f->size))
            CHECK_ST(st, MPIUCC_ERR_PAYLOAD_CHECKSUM);
    }
    /* headers that lie, with a correct checksum: every field, random values */
    static const struct { int at, len; } fields[] = {{4, 1}, {5, 1}, {6, 1}, {7, 1}, {8, 8},
                                                      {16, 8}, {24, 8}, {32, 8}, {40, 4},
                                                      {44, 4}, {48, 8}, {56, 4}};
    for (int t = 0; t < 3000; t++) {
        memcpy(buf, f->data, f->size);
        int fi = (int)(tu_rand_u64() % 12);
        uint64_t v = tu_rand_u64();
        switch (tu_rand_u64() % 4) { /* small changes find more interesting corners */
        case 0: v %= 4; break;
        case 1: v = mpiucc_get_u64(buf + fields[fi].at) + (v % 5) - 2; break;
        case 2: v = mpiucc_get_u64(buf + fields[fi].at) ^ (1ull << (v % 64)); break;
        default: break;
        }
        for (int k = 0; k < fields[fi].len; k++) buf[fields[fi].at + k] = (uint8_t)(v >> (8 * k));
        mpiucc_put_u32(buf + 60, mpiucc_crc32c(0, buf, 60));
        try_decode(buf, f->size, f);
    }
    /* payload bytes that lie about sizes and counts, with the frame checksums fixed */
    for (int t = 0; t < 2000 && f->sub; t++) {
        memcpy(buf, f->data, f->size);
        size_t at = MPIUCC_HEADER_SIZE + (size_t)(tu_rand_u64() % f->sub);
        buf[at] = (uint8_t)(buf[at] + 1 + tu_rand_u64() % 3);
        if (f->checksum) {
            mpiucc_put_u32(buf + 56, mpiucc_crc32c(0, buf + 64, f->size - 64));
            mpiucc_put_u32(buf + 60, mpiucc_crc32c(0, buf, 60));
        }
        CHECK(try_decode(buf, f->size, f) != MPIUCC_OK);
    }
    free(buf);
}

static void test_damage(void) {
    static float xf[N];
    static double xd[N];
    tu_seed(11);
    for (int i = 0; i < N; i++) {
        double v = tu_rand_student(2) * 1e-2;
        if (i % 50 == 7) v = i % 100 == 7 ? NAN : INFINITY;
        if (i % 64 >= 40 && i % 64 < 50) v = 0;
        xf[i] = (float)v;
        xd[i] = v;
    }
    mpiucc_params p = MPIUCC_PARAMS_INIT;
    mpiucc_params q = MPIUCC_PARAMS_INIT;
    q.error_bound = 1.0;
    q.dtype = MPIUCC_DTYPE_F64;
    q.level = MPIUCC_LEVEL_DENSE;
    int dense = mpiucc_compress_bound(&q, 1) != 0;
    for (int v = 0; v < 12; v++) {
        p = (mpiucc_params)MPIUCC_PARAMS_INIT;
        p.error_bound = v % 3 == 2 ? 1e-3 : 1e-4;
        p.mode = v % 3 == 2 ? MPIUCC_MODE_REL : MPIUCC_MODE_ABS;
        p.predictor = (uint32_t)(v & 1);
        p.flags = v & 2 ? MPIUCC_FLAG_PAYLOAD_CHECKSUM : 0;
        p.level = (uint32_t)(v >= 8 && dense);
        if (v >= 8 && !dense) continue;
        if (v >= 4 && v < 8) p.dtype = MPIUCC_DTYPE_F64;
        size_t n = v == 5 ? 33 : v == 6 ? 1 : N;
        frame f = make_frame(&p, p.dtype == MPIUCC_DTYPE_F64 ? (void *)xd : (void *)xf, n);
        damage(&f);
        free(f.data);
    }
    p = (mpiucc_params)MPIUCC_PARAMS_INIT;
    p.codec = MPIUCC_CODEC_RAW;
    frame f = make_frame(&p, xf, N);
    damage(&f);
    free(f.data);
    p.flags = MPIUCC_FLAG_PAYLOAD_CHECKSUM;
    f = make_frame(&p, xf, 40);
    damage(&f);
    free(f.data);
}

static void test_raw(void) {
    static const mpiucc_dtype types[] = {MPIUCC_DTYPE_F32, MPIUCC_DTYPE_F64, MPIUCC_DTYPE_F16,
                                         MPIUCC_DTYPE_BF16};
    uint8_t x[8 * 100], y[8 * 100], frame_[64 + 8 * 100 + 1];
    for (int t = 0; t < 4; t++)
        for (size_t n = 0; n <= 100; n += 33) {
            mpiucc_params p = MPIUCC_PARAMS_INIT;
            p.codec = MPIUCC_CODEC_RAW;
            p.dtype = types[t];
            size_t es = mpiucc_dtype_size(types[t]), size, cnt;
            for (size_t i = 0; i < n * es; i++) x[i] = (uint8_t)tu_rand_u64();
            if (types[t] == MPIUCC_DTYPE_F32) /* keep the add check free of NaN */
                for (size_t i = 0; i < n; i++) ((float *)(void *)x)[i] = (float)i;
            CHECK(mpiucc_compress_bound(&p, n) <= sizeof frame_);
            CHECK_ST(mpiucc_compress(&p, x, n, frame_, sizeof frame_, &size), MPIUCC_OK);
            CHECK(size == 64 + n * es);
            mpiucc_header h;
            CHECK_ST(mpiucc_read_header(frame_, size, &h), MPIUCC_OK);
            CHECK(h.codec == MPIUCC_CODEC_RAW && h.count == n && h.bound == 0);
            CHECK_ST(mpiucc_decompress(frame_, size, y, n * es, &cnt), MPIUCC_OK);
            CHECK(cnt == n && !memcmp(x, y, n * es));
            if (types[t] == MPIUCC_DTYPE_F32) {
                CHECK_ST(mpiucc_decompress_add(frame_, size, y, n * es, &cnt), MPIUCC_OK);
                for (size_t i = 0; i < n; i++) CHECK(((float *)(void *)y)[i] == 2.0f * (float)i);
            }
        }
}

int main(void) {
    test_raw();
    test_damage();
    return tu_report("test_frame");
}
