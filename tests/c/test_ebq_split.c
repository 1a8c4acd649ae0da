/* ebq over threads: for every thread count the frames (compress, compress_ef, ebq_add), the
 * residuals and the decoded values are byte for byte those of a single thread. Sizes around
 * the segment edges (kernel chunks of 256 elements), data with outliers in every segment. */
#include "test_util.h"
#include "../../codecs/src/internal.h"

#define MAXN 300001

static float x[MAXN], x2[MAXN], r1[MAXN], rk[MAXN], out1[MAXN], outk[MAXN];
static uint8_t sym[MAXN]; /* dense scratch */
static double xd[MAXN];

static void fill(int kind, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double v = tu_rand_laplace(1.0);
        switch (kind) {
        case 0: break;                                       /* plain */
        case 1: if (i % 97 == 5) v = i % 3 ? NAN : INFINITY; /* outliers everywhere */
                if (i % 389 == 7) v = 1e30;
                break;
        case 2: v = (i / 700) % 2 ? 0.0 : v * 1e-3; break;  /* runs of zeros */
        case 3: v = i % 2 ? 1e-42 : -0.0; break;             /* denormals and -0 */
        case 4: v = (i / 256) % 2 ? 1e20 * v : v; break;     /* huge range by chunk */
        }
        x[i] = (float)v;
        x2[i] = (float)(v * 0.5 + 0.25);
        xd[i] = v * (1 + 1e-9);
    }
}

static size_t compress(mpiucc_params p, const void *src, float *res, size_t n, uint8_t *buf,
                       size_t cap, unsigned threads) {
    size_t size = 0;
    p.threads = threads;
    mpiucc_status st = res ? mpiucc_compress_ef(&p, src, res, n, buf, cap, &size)
                           : mpiucc_compress(&p, src, n, buf, cap, &size);
    CHECK_ST(st, MPIUCC_OK);
    return size;
}

static void check_size(size_t n, int dense, int delta, int rel, int f64, int ef,
                       uint8_t *f1, uint8_t *fk, uint8_t *sum1, uint8_t *sumk) {
    mpiucc_params p = MPIUCC_PARAMS_INIT;
    p.dtype = f64 ? MPIUCC_DTYPE_F64 : MPIUCC_DTYPE_F32;
    p.error_bound = rel ? 1e-3 : 0.01;
    p.mode = rel ? MPIUCC_MODE_REL : MPIUCC_MODE_ABS;
    p.level = dense ? MPIUCC_LEVEL_DENSE : MPIUCC_LEVEL_FAST;
    p.predictor = delta ? MPIUCC_PREDICTOR_DELTA : MPIUCC_PREDICTOR_NONE;
    size_t cap = mpiucc_compress_bound(&p, n);
    const void *src = f64 ? (const void *)xd : (const void *)x;
    int use_ef = ef && !f64;
    if (use_ef) for (size_t i = 0; i < n; i++) r1[i] = (float)(i % 7) * 1e-3f;
    size_t s1 = compress(p, src, use_ef ? r1 : NULL, n, f1, cap, 1);
    for (unsigned t = 2; t <= 5; t++) {
        if (use_ef) for (size_t i = 0; i < n; i++) rk[i] = (float)(i % 7) * 1e-3f;
        size_t sk = compress(p, src, use_ef ? rk : NULL, n, fk, cap, t);
        CHECK(sk == s1 && !memcmp(f1, fk, s1));
        if (use_ef) CHECK(!memcmp(r1, rk, n * sizeof(float)));
        /* an exact-size buffer is enough without error feedback */
        if (!use_ef) CHECK(compress(p, src, NULL, n, fk, s1, t) == s1 && !memcmp(f1, fk, s1));
        if (f64) continue;
        size_t c1 = 0, ck = 0;
        for (int add = 0; add < 2; add++) {
            for (size_t i = 0; i < n; i++) out1[i] = outk[i] = (float)i;
            CHECK_ST(mpiucc_decompress_threads(f1, s1, out1, n * 4, NULL, 0, add, 1, &c1),
                     MPIUCC_OK);
            CHECK_ST(mpiucc_decompress_threads(f1, s1, outk, n * 4, NULL, 0, add, t, &ck),
                     MPIUCC_OK);
            CHECK(c1 == n && ck == n && !memcmp(out1, outk, n * sizeof(float)));
            /* dense in one pass: the blocks read in parts on threads */
            for (size_t i = 0; i < n; i++) outk[i] = (float)i;
            CHECK_ST(mpiucc_decompress_threads(f1, s1, outk, n * 4, sym, n, add, t, &ck),
                     MPIUCC_OK);
            CHECK(ck == n && !memcmp(out1, outk, n * sizeof(float)));
        }
    }
    if (f64 || rel) return;
    /* ebq_add: a + b on the same grid, one thread against several */
    size_t sb = compress(p, x2, NULL, n, fk, cap, 1);
    size_t acap = mpiucc_ebq_add_bound(f1, s1, fk, sb), a1 = 0, ak = 0;
    CHECK_ST(mpiucc_ebq_add_threads(f1, s1, fk, sb, sum1, acap, 1, &a1), MPIUCC_OK);
    for (unsigned t = 2; t <= 5; t++) {
        CHECK_ST(mpiucc_ebq_add_threads(f1, s1, fk, sb, sumk, acap, t, &ak), MPIUCC_OK);
        CHECK(a1 == ak && !memcmp(sum1, sumk, a1));
    }
}

/* Dense frames of several 2^20-symbol segments (format v2 and later): the same bytes on 1 and 3 threads,
 * the same values decoded in one pass (scratch, threads) and in two (no scratch), within the
 * bound; a damaged stream size is refused before anything is written. */
static void test_dense_segments(void) {
    size_t n = (2u << 20) + 12345;
    float *v = malloc(n * 4), *a = malloc(n * 4), *b = malloc(n * 4);
    uint8_t *scratch = malloc(n);
    mpiucc_params p = MPIUCC_PARAMS_INIT;
    p.level = MPIUCC_LEVEL_DENSE;
    p.error_bound = 1e-3;
    size_t cap = mpiucc_compress_bound(&p, n), s1 = 0, s3 = 0;
    uint8_t *f1 = malloc(cap), *f3 = malloc(cap);
    for (size_t i = 0; i < n; i++) /* segment 1 all zeros: a constant stream */
        v[i] = (i >> 20) == 1 ? 0.0f : (float)tu_rand_laplace(i < 1000 ? 1e3 : 0.01);
    v[5] = NAN;
    p.threads = 1;
    CHECK_ST(mpiucc_compress(&p, v, n, f1, cap, &s1), MPIUCC_OK);
    p.threads = 3;
    CHECK_ST(mpiucc_compress(&p, v, n, f3, cap, &s3), MPIUCC_OK);
    CHECK(s1 == s3 && !memcmp(f1, f3, s1));
    CHECK(f1[4] == 3);
    CHECK_ST(mpiucc_decompress_threads(f1, s1, a, n * 4, scratch, n, 0, 3, NULL), MPIUCC_OK);
    CHECK_ST(mpiucc_decompress_threads(f1, s1, b, n * 4, NULL, 0, 0, 1, NULL), MPIUCC_OK);
    CHECK(!memcmp(a, b, n * 4));
    int ok = isnan(a[5]);
    for (size_t i = 0; i < n; i++)
        if (i != 5) ok &= fabs((double)a[i] - (double)v[i]) <= 1e-3;
    CHECK(ok);
    /* the second stream's size one larger: the sizes no longer add up */
    uint8_t *pl = f1 + MPIUCC_HEADER_SIZE;
    mpiucc_put_u64(pl + 24, mpiucc_get_u64(pl + 24) + 1);
    memset(b, 0x55, n * 4);
    CHECK_ST(mpiucc_decompress_threads(f1, s1, b, n * 4, scratch, n, 0, 3, NULL),
             MPIUCC_ERR_CORRUPT);
    CHECK_ST(mpiucc_decompress_threads(f1, s1, b, n * 4, NULL, 0, 0, 1, NULL),
             MPIUCC_ERR_CORRUPT);
    CHECK(((uint8_t *)b)[0] == 0x55 && ((uint8_t *)b)[n * 4 - 1] == 0x55); /* untouched */
    free(v), free(a), free(b), free(scratch), free(f1), free(f3);
}

/* Format v3's wide symbols: indices of every bit length up to 2^24 (extra bits in every kernel
 * chunk, chunks ending on partial bytes), the same frame on 1 to 5 threads, decoded within the
 * bound in one pass and in two; then damaged extra bits are refused before anything is
 * written: a size one byte short, and a padding bit set. */
static void test_dense_wide(void) {
    size_t n = 3 * 256 * 7 + 77;
    mpiucc_params p = MPIUCC_PARAMS_INIT;
    p.level = MPIUCC_LEVEL_DENSE;
    p.error_bound = 0.5;
    size_t cap = mpiucc_compress_bound(&p, n), s1 = 0, sk = 0;
    uint8_t *f1 = malloc(cap), *fk = malloc(cap), *scratch = malloc(n);
    float *v = malloc(n * 4), *a = malloc(n * 4), *b = malloc(n * 4);
    for (size_t i = 0; i < n; i++) { /* |q| up to about 2^23, log-uniform, both signs */
        double m = ldexp(1.0 + tu_rand_laplace(0.3) * 0.1, (int)(i * 7919 % 24));
        v[i] = (float)(i % 3 ? m : -m);
        if (i % 500 == 3) v[i] = (float)tu_rand_laplace(1.0); /* small ones between */
    }
    p.threads = 1;
    CHECK_ST(mpiucc_compress(&p, v, n, f1, cap, &s1), MPIUCC_OK);
    CHECK(f1[4] == 3);
    for (unsigned t = 2; t <= 5; t++) {
        p.threads = t;
        CHECK_ST(mpiucc_compress(&p, v, n, fk, cap, &sk), MPIUCC_OK);
        CHECK(s1 == sk && !memcmp(f1, fk, s1));
    }
    CHECK_ST(mpiucc_decompress_threads(f1, s1, a, n * 4, scratch, n, 0, 3, NULL), MPIUCC_OK);
    CHECK_ST(mpiucc_decompress_threads(f1, s1, b, n * 4, NULL, 0, 0, 1, NULL), MPIUCC_OK);
    CHECK(!memcmp(a, b, n * 4));
    int ok = 1;
    for (size_t i = 0; i < n; i++) ok &= fabs((double)a[i] - (double)v[i]) <= 0.5;
    CHECK(ok);
    uint8_t *pl = f1 + MPIUCC_HEADER_SIZE;
    CHECK(mpiucc_get_u64(pl) == 0 && mpiucc_get_u64(pl + 8) > 0); /* no outliers, extra bits */
    /* the extra bits' size one byte short (the streams' sizes then fill one byte less) */
    memcpy(fk, f1, s1);
    uint8_t *pk = fk + MPIUCC_HEADER_SIZE;
    mpiucc_put_u64(pk + 8, mpiucc_get_u64(pk + 8) - 1);
    memset(b, 0x55, n * 4);
    CHECK_ST(mpiucc_decompress_threads(fk, s1, b, n * 4, scratch, n, 0, 3, NULL),
             MPIUCC_ERR_CORRUPT);
    CHECK_ST(mpiucc_decompress_threads(fk, s1, b, n * 4, NULL, 0, 0, 1, NULL),
             MPIUCC_ERR_CORRUPT);
    CHECK(((uint8_t *)b)[0] == 0x55 && ((uint8_t *)b)[n * 4 - 1] == 0x55);
    free(v), free(a), free(b), free(scratch), free(f1), free(fk);
    /* one index of 6 extra bits in a chunk: one byte, its two top bits padding */
    float one[256] = {0};
    one[9] = 150.0f; /* step 1: q = 150, z = 300 = 0b100101100: 9 bits, 6 extra */
    uint8_t g[1024];
    size_t gs = 0;
    p.threads = 1;
    CHECK_ST(mpiucc_compress(&p, one, 256, g, sizeof g, &gs), MPIUCC_OK);
    uint8_t *gp = g + MPIUCC_HEADER_SIZE;
    CHECK(mpiucc_get_u64(gp + 8) == 1 && gp[24] == (300 & 63));
    float back[256];
    CHECK_ST(mpiucc_decompress(g, gs, back, sizeof back, NULL), MPIUCC_OK);
    CHECK(back[9] == 150.0f && back[0] == 0.0f);
    gp[24] |= 0x80; /* a padding bit */
    memset(back, 0x55, sizeof back);
    CHECK_ST(mpiucc_decompress(g, gs, back, sizeof back, NULL), MPIUCC_ERR_CORRUPT);
    CHECK(((uint8_t *)back)[0] == 0x55);
}

int main(void) {
    static const size_t sizes[] = {0, 1, 31, 255, 256, 257, 511, 512, 513, 767, 1024, 1025,
                                   4097, 65539, MAXN};
    mpiucc_params big = MPIUCC_PARAMS_INIT;
    big.dtype = MPIUCC_DTYPE_F64;
    big.level = MPIUCC_LEVEL_DENSE;
    big.error_bound = 1;
    size_t cap = mpiucc_compress_bound(&big, MAXN) * 2;
    uint8_t *f1 = malloc(cap), *fk = malloc(cap), *s1 = malloc(cap), *sk = malloc(cap);
    tu_seed(29);
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int kind = 0; kind < 5; kind++) {
            size_t n = sizes[si];
            if (n == MAXN && kind > 1) continue; /* keep the run short */
            fill(kind, n);
            for (int v = 0; v < 16; v++)
                check_size(n, v & 1, v >> 1 & 1, v >> 2 & 1, v >> 3 & 1, kind != 3, f1,
                           fk, s1, sk);
        }
    test_dense_segments();
    test_dense_wide();
    /* the default thread count is 1 or more and MPIUCC_THREADS overrides it */
    CHECK(mpiucc_default_threads() >= 1);
    setenv("MPIUCC_THREADS", "3", 1);
    CHECK(mpiucc_default_threads() == 3);
    setenv("MPIUCC_THREADS", "junk", 1);
    CHECK(mpiucc_default_threads() >= 1);
    unsetenv("MPIUCC_THREADS");
    free(f1);
    free(fk);
    free(s1);
    free(sk);
    return tu_report("test_ebq_split");
}
