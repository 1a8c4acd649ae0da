/* Quantizing codecs: generic and AVX2 paths give the same bytes; error feedback is exact and
 * does not drift; stochastic rounding is unbiased and reproducible. */
#include "q_testlib.h"

static int have_avx2;

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float ffrom(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* Data kinds for the path comparison: 0 gradients, 1 specials sprinkled in, 2 random bits,
 * 3 subnormals and zeros. */
static void fill_kind(float *x, size_t n, int kind) {
    static const uint32_t specials[] = {
        0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fa00000u, 0x7f800000u, 0xff800000u, 0x00000000u,
        0x80000000u, 0x00000001u, 0x807fffffu, 0x00800000u, 0x7f7fffffu, 0xff7fffffu, 0x7f7f8000u,
        0x7f7f7fffu, 0x7f7f0001u, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0xc77ff000u, 0x47800000u,
        0x33000000u, 0x33000001u, 0x387fc000u, 0x3f801000u, 0x3f803000u, 0x3f808000u, 0x3f818000u};
    q_fill(x, n);
    if (kind == 1)
        for (size_t i = 0; i < n; i++)
            if (q_rand() % 61 == 0) x[i] = ffrom(specials[q_rand() % (sizeof specials / 4)]);
    if (kind == 2)
        for (size_t i = 0; i < n; i++) x[i] = ffrom((uint32_t)q_rand());
    if (kind == 3) /* subnormal and zero stretches: the capped multiplier, zero scales */
        for (size_t i = 0; i < n; i++) x[i] = (i / 40) % 3 == 0 ? 0.0f : x[i] * 0x1p-130f;
}

static int compress_at(int level, const mpiucc_params *p, const float *x, float *res, size_t n,
                       uint8_t *buf, size_t cap, size_t *size) {
    mpiucc_set_simd_level((mpiucc_simd)level);
    mpiucc_status st = res ? mpiucc_compress_ef(p, x, res, n, buf, cap, size)
                           : mpiucc_compress(p, x, n, buf, cap, size);
    return st == MPIUCC_OK;
}

static void compare_paths(const mpiucc_params *p, size_t n, int kind) {
    float *x = malloc((n + 1) * 4), *r0 = malloc((n + 1) * 4), *r1 = malloc((n + 1) * 4);
    float *y0 = malloc((n + 1) * 4), *y1 = malloc((n + 1) * 4);
    fill_kind(x, n, kind);
    fill_kind(r0, n, 0);
    for (size_t i = 0; i < n; i++) r0[i] *= 0.1f;
    size_t cap = mpiucc_compress_bound(p, n), s0 = 0, s1 = 0;
    uint8_t *f0 = malloc(cap), *f1 = malloc(cap);
    for (int ef = 0; ef < 2; ef++) {
        memcpy(r1, r0, n * 4);
        CHECK(compress_at(MPIUCC_SIMD_GENERIC, p, x, ef ? r0 : NULL, n, f0, cap, &s0));
        CHECK(compress_at(MPIUCC_SIMD_AVX2, p, x, ef ? r1 : NULL, n, f1, cap, &s1));
        CHECKF(s0 == s1 && !memcmp(f0, f1, s0), "%s n %zu block %u kind %d ef %d rounding %u: frames differ",
               q_codec_name(p->codec), n, p->block_size, kind, ef, p->rounding);
        if (ef) {
            size_t bad = n;
            for (size_t i = 0; i < n && bad == n; i++)
                if (fbits(r0[i]) != fbits(r1[i])) bad = i;
            CHECKF(bad == n, "%s n %zu kind %d: residual %zu differs: %a vs %a", q_codec_name(p->codec),
                   n, kind, bad, r0[bad], r1[bad]);
        }
        for (int add = 0; add < 2; add++) {
            for (size_t i = 0; i < n; i++) y0[i] = y1[i] = add ? (float)i : -1.0f;
            mpiucc_set_simd_level(MPIUCC_SIMD_GENERIC);
            CHECK(mpiucc_decompress(f0, s0, y0, n * 4, NULL) == MPIUCC_OK || add);
            if (add) CHECK(mpiucc_decompress_add(f0, s0, y0, n * 4, NULL) == MPIUCC_OK);
            mpiucc_set_simd_level(MPIUCC_SIMD_AVX2);
            CHECK(mpiucc_decompress(f0, s0, y1, n * 4, NULL) == MPIUCC_OK || add);
            if (add) CHECK(mpiucc_decompress_add(f0, s0, y1, n * 4, NULL) == MPIUCC_OK);
            CHECKF(!memcmp(y0, y1, n * 4), "%s n %zu kind %d add %d: decoded values differ",
                   q_codec_name(p->codec), n, kind, add);
        }
    }
    /* decoders agree on damaged payloads too */
    if (s0 > MPIUCC_HEADER_SIZE) {
        for (size_t i = MPIUCC_HEADER_SIZE; i < s0; i++)
            if (q_rand() % 3 == 0) f0[i] = (uint8_t)q_rand();
        mpiucc_status a, b;
        mpiucc_set_simd_level(MPIUCC_SIMD_GENERIC);
        a = mpiucc_decompress(f0, s0, y0, n * 4, NULL);
        mpiucc_set_simd_level(MPIUCC_SIMD_AVX2);
        b = mpiucc_decompress(f0, s0, y1, n * 4, NULL);
        CHECK(a == b);
        if (a == MPIUCC_OK) CHECKF(!memcmp(y0, y1, n * 4), "%s: damaged payload decodes differ", q_codec_name(p->codec));
    }
    free(f0), free(f1), free(x), free(r0), free(r1), free(y0), free(y1);
}

static void test_paths(void) {
    const size_t sizes[] = {1, 7, 8, 9, 31, 32, 33, 63, 255, 256, 257, 1000, 4099, 70001};
    const uint32_t blocks[] = {0, 8, 24, 40, 1000};
    for (size_t ci = 0; ci < Q_NCODECS; ci++)
        for (uint32_t rounding = 0; rounding < 2; rounding++)
            for (size_t bi = 0; bi < 5; bi++)
                for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
                    for (int kind = 0; kind < 4; kind++) {
                        mpiucc_params p = q_params(q_codecs[ci], MPIUCC_DTYPE_F32);
                        p.rounding = rounding;
                        p.seed = 12345 + si;
                        if (q_block(&p)) p.block_size = blocks[bi];
                        else if (bi) continue;
                        if (p.codec == MPIUCC_CODEC_TOPK && blocks[bi] && blocks[bi] < 16) p.levels = 3;
                        if (mpiucc_compress_bound(&p, 1) == 0) continue; /* rounding not offered */
                        compare_paths(&p, sizes[si], kind);
                    }
    /* qsgd: every code width (2..8 bits) */
    const uint32_t levels[] = {1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127};
    for (size_t li = 0; li < sizeof levels / sizeof levels[0]; li++)
        for (uint32_t rounding = 0; rounding < 2; rounding++)
            for (size_t si = 0; si < 6; si++)
                for (int kind = 0; kind < 3; kind++) {
                    const size_t ns[] = {5, 8, 64, 263, 1000, 4103};
                    mpiucc_params p = q_params(MPIUCC_CODEC_QSGD, MPIUCC_DTYPE_F32);
                    p.levels = levels[li];
                    p.rounding = rounding;
                    p.block_size = si & 1 ? 24 : 0;
                    p.seed = li;
                    compare_paths(&p, ns[si], kind);
                }
    /* every fp16 and bf16 pattern decodes the same way on both paths */
    uint8_t *frame = malloc(MPIUCC_HEADER_SIZE + 2 * 65536);
    float *y0 = malloc(65536 * 4), *y1 = malloc(65536 * 4), one = 1.0f;
    for (uint32_t codec = MPIUCC_CODEC_FP16; codec <= MPIUCC_CODEC_BF16; codec++) {
        mpiucc_params p = q_params(codec, MPIUCC_DTYPE_F32);
        size_t size;
        float *x = malloc(65536 * 4);
        for (size_t i = 0; i < 65536; i++) x[i] = one;
        CHECK(mpiucc_compress(&p, x, 65536, frame, MPIUCC_HEADER_SIZE + 2 * 65536, &size) == MPIUCC_OK);
        for (uint32_t h = 0; h < 65536; h++) {
            frame[MPIUCC_HEADER_SIZE + 2 * h] = (uint8_t)h;
            frame[MPIUCC_HEADER_SIZE + 2 * h + 1] = (uint8_t)(h >> 8);
        }
        mpiucc_set_simd_level(MPIUCC_SIMD_GENERIC);
        CHECK(mpiucc_decompress(frame, size, y0, 65536 * 4, NULL) == MPIUCC_OK);
        mpiucc_set_simd_level(MPIUCC_SIMD_AVX2);
        CHECK(mpiucc_decompress(frame, size, y1, 65536 * 4, NULL) == MPIUCC_OK);
        size_t bad = 65536;
        for (size_t i = 0; i < 65536 && bad == 65536; i++)
            if (fbits(y0[i]) != fbits(y1[i])) bad = i;
        CHECKF(bad == 65536, "%s pattern %zx: %08x vs %08x", q_codec_name(codec), bad, fbits(y0[bad]), fbits(y1[bad]));
        /* and re-encoding every decoded value gives the pattern back (NaNs quieted) */
        mpiucc_set_simd_level(MPIUCC_SIMD_AVX2);
        CHECK(mpiucc_compress(&p, y1, 65536, frame, MPIUCC_HEADER_SIZE + 2 * 65536, &size) == MPIUCC_OK);
        for (uint32_t h = 0; h < 65536; h++) {
            uint32_t got = frame[MPIUCC_HEADER_SIZE + 2 * h] | frame[MPIUCC_HEADER_SIZE + 2 * h + 1] << 8;
            int nan = codec == MPIUCC_CODEC_FP16 ? (h & 0x7c00) == 0x7c00 && (h & 0x3ff) : (h & 0x7f80) == 0x7f80 && (h & 0x7f);
            uint32_t want = nan ? h | (codec == MPIUCC_CODEC_FP16 ? 0x200u : 0x40u) : h;
            CHECKF(got == want, "%s re-encode %04x -> %04x", q_codec_name(codec), h, got);
        }
        free(x);
    }
    free(frame), free(y0), free(y1);
}

/* ---- error feedback ---- */

static void test_ef_exact(uint32_t codec, uint32_t dtype, size_t n) {
    mpiucc_params p = q_params(codec, dtype);
    p.seed = 99;
    if (codec >= MPIUCC_CODEC_INT8 && codec != MPIUCC_CODEC_SIGN && codec != MPIUCC_CODEC_TOPK)
        p.rounding = MPIUCC_ROUND_STOCHASTIC;
    size_t es = mpiucc_dtype_size((mpiucc_dtype)dtype), size;
    float *xf = malloc(n * 4 + 4), *rf = malloc(n * 4 + 4);
    q_fill(xf, n);
    q_fill(rf, n);
    for (size_t i = 0; i < n; i++) rf[i] *= 0.3f;
    void *x = q_to_dtype(dtype, xf, n), *r = q_to_dtype(dtype, rf, n), *r_old = malloc(n * es + 1);
    void *y = malloc(n * es + 1);
    memcpy(r_old, r, n * es);
    mpiucc_status st;
    uint8_t *frame = q_compress(&p, x, r, n, &size, &st);
    CHECK(frame != NULL);
    if (frame) {
        /* the frame is the plain compression of v = x + r */
        void *v = malloc(n * es + 1);
        for (size_t i = 0; i < n; i++) {
            if (dtype == MPIUCC_DTYPE_F64)
                ((double *)v)[i] = ((double *)x)[i] + ((double *)r_old)[i];
            else if (dtype == MPIUCC_DTYPE_F32)
                ((float *)v)[i] = ((float *)x)[i] + ((float *)r_old)[i];
        }
        if (dtype == MPIUCC_DTYPE_F32 || dtype == MPIUCC_DTYPE_F64) {
            size_t size2;
            uint8_t *plain = q_compress(&p, v, NULL, n, &size2, &st);
            CHECK(plain && size2 == size && !memcmp(plain, frame, size));
            free(plain);
        }
        CHECK(mpiucc_decompress(frame, size, y, n * es, NULL) == MPIUCC_OK);
        for (size_t i = 0; i < n; i++) {
            if (dtype == MPIUCC_DTYPE_F32) {
                float want = ((float *)v)[i] - ((float *)y)[i], got = ((float *)r)[i];
                CHECKF(fbits(want) == fbits(got), "%s ef %zu: residual %a, v - y %a", q_codec_name(codec), i, got, want);
            } else if (dtype == MPIUCC_DTYPE_F64) {
                CHECK(((double *)r)[i] == ((double *)v)[i] - ((double *)y)[i]);
            } else { /* narrow dtypes: residual = v - y rounded to the dtype */
                double vv = q_get(dtype, x, i) + q_get(dtype, r_old, i), want = vv - q_get(dtype, y, i);
                double got = q_get(dtype, r, i);
                /* v - y rounds once to the dtype; y itself was rounded from the f32 decoding */
                CHECKF(fabs(got - want) <= (fabs(want) + fabs(vv)) * 0x1p-7 + 0x1p-24,
                       "%s narrow ef %zu: %g vs %g", q_codec_name(codec), i, got, want);
            }
        }
        free(v);
        free(frame);
    }
    free(x), free(r), free(r_old), free(y), free(xf), free(rf);
}

/* Over T steps, sum of decoded outputs = sum of inputs - final residual (+ rounding of the
 * f32 additions): the decoded stream does not drift from the input stream. */
static void test_ef_drift(uint32_t codec, int level) {
    mpiucc_set_simd_level((mpiucc_simd)level);
    mpiucc_params p = q_params(codec, MPIUCC_DTYPE_F32);
    if (codec == MPIUCC_CODEC_QSGD || codec == MPIUCC_CODEC_INT4) p.rounding = MPIUCC_ROUND_STOCHASTIC;
    const size_t n = 1000;
    const int steps = 200;
    float x[1000], r[1000] = {0}, y[1000];
    double sin[1000] = {0}, sout[1000] = {0}, vmax = 0;
    size_t cap = mpiucc_compress_bound(&p, n), size;
    uint8_t *buf = malloc(cap);
    for (int t = 0; t < steps; t++) {
        p.seed = (uint64_t)t;
        q_fill(x, n);
        for (size_t i = 0; i < n; i++) {
            sin[i] += x[i];
            if (fabs(x[i] + r[i]) > vmax) vmax = fabs(x[i] + r[i]);
        }
        CHECK(mpiucc_compress_ef(&p, x, r, n, buf, cap, &size) == MPIUCC_OK);
        CHECK(mpiucc_decompress(buf, size, y, sizeof y, NULL) == MPIUCC_OK);
        for (size_t i = 0; i < n; i++) sout[i] += y[i];
    }
    /* each step's v = x + r and r = v - y round once in f32: at most ulp(vmax) per step */
    double tol = steps * vmax * 0x1p-23, worst = 0, rmax = 0;
    for (size_t i = 0; i < n; i++) {
        double gap = fabs(sout[i] - (sin[i] - r[i]));
        if (gap > worst) worst = gap;
        if (fabs(r[i]) > rmax) rmax = fabs(r[i]);
    }
    CHECKF(worst <= tol, "%s drift %g > %g", q_codec_name(codec), worst, tol);
    /* and the final residual is one step's error: bounded by the largest value seen */
    CHECKF(rmax <= 2 * vmax, "%s residual %g vs values %g", q_codec_name(codec), rmax, vmax);
    free(buf);
}

/* ---- stochastic rounding ---- */

static void test_stochastic(uint32_t codec) {
    mpiucc_params p = q_params(codec, MPIUCC_DTYPE_F32);
    p.rounding = MPIUCC_ROUND_STOCHASTIC;
    p.levels = codec == MPIUCC_CODEC_QSGD ? 3 : 0;
    const size_t n = 512;
    const int seeds = 2000;
    float x[512], y[512];
    double mean[512] = {0}, stepmax[2] = {0, 0};
    q_fill(x, n);
    size_t cap = mpiucc_compress_bound(&p, n), size, size2;
    uint8_t *a = malloc(cap), *b = malloc(cap);
    for (int s = 0; s < seeds; s++) {
        p.seed = 1000003ull * (uint64_t)s + ((uint64_t)s << 40);
        CHECK(mpiucc_compress(&p, x, n, a, cap, &size) == MPIUCC_OK);
        CHECK(mpiucc_compress(&p, x, n, b, cap, &size2) == MPIUCC_OK);
        CHECK(size == size2 && !memcmp(a, b, size)); /* reproducible for a seed */
        CHECK(mpiucc_decompress(a, size, y, sizeof y, NULL) == MPIUCC_OK);
        for (size_t i = 0; i < n; i++) mean[i] += y[i] / seeds;
        for (int blk = 0; blk < 2 && s == 0; blk++) {
            float sc = q_frame_scale(&p, a, (size_t)blk);
            stepmax[blk] = codec == MPIUCC_CODEC_QSGD ? sc / p.levels : sc;
        }
    }
    /* One decode is x rounded to one of the two neighbouring levels, step q apart: its variance
     * is at most q^2/4, so the mean of S seeds has standard error at most q / (2 sqrt(S)).
     * 512 elements at 5 standard errors: a false alarm has probability below 1e-3. The bias of
     * the f32 arithmetic (2^-20 q) is far below that. */
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double q = stepmax[i / 256], se = q / (2.0 * sqrt((double)seeds));
        double z = fabs(mean[i] - x[i]) / se;
        if (z > worst) worst = z;
    }
    CHECKF(worst <= 5.0, "%s stochastic rounding biased: %.2f standard errors", q_codec_name(codec), worst);
    /* different seeds give different frames */
    p.seed = 1;
    CHECK(mpiucc_compress(&p, x, n, a, cap, &size) == MPIUCC_OK);
    p.seed = 2;
    CHECK(mpiucc_compress(&p, x, n, b, cap, &size2) == MPIUCC_OK);
    CHECK(memcmp(a, b, size) != 0);
    /* seeds that differ only in their high 32 bits differ too */
    p.seed = 1ull << 32 | 1;
    CHECK(mpiucc_compress(&p, x, n, b, cap, &size2) == MPIUCC_OK);
    CHECK(memcmp(a, b, size) != 0);
    free(a), free(b);
}

int main(void) {
    have_avx2 = mpiucc_set_simd_level(MPIUCC_SIMD_AVX2) == MPIUCC_SIMD_AVX2;
    if (have_avx2)
        test_paths();
    else
        printf("no AVX2 on this CPU: the path comparison is skipped\n");
    for (int level = MPIUCC_SIMD_GENERIC; level <= MPIUCC_SIMD_AVX2; level++) {
        if ((int)mpiucc_set_simd_level((mpiucc_simd)level) != level) continue;
        for (size_t ci = 0; ci < Q_NCODECS; ci++) {
            for (size_t ti = 0; ti < 4; ti++) {
                test_ef_exact(q_codecs[ci], q_dtypes[ti], 1);
                test_ef_exact(q_codecs[ci], q_dtypes[ti], 257);
                test_ef_exact(q_codecs[ci], q_dtypes[ti], 5003);
            }
            test_ef_drift(q_codecs[ci], level);
        }
    }
    mpiucc_set_simd_level(MPIUCC_SIMD_AVX2);
    test_stochastic(MPIUCC_CODEC_INT8);
    test_stochastic(MPIUCC_CODEC_INT4);
    test_stochastic(MPIUCC_CODEC_QSGD);
    if (q_failures) {
        fprintf(stderr, "test_q_simd_ef: %d failures\n", q_failures);
        return 1;
    }
    printf("test_q_simd_ef: ok\n");
    return 0;
}
