/* Non-finite values (codecs/FORMAT.md, "Non-finite values"), for every codec and dtype, on
 * every SIMD path, with and without error feedback:
 *  - MPIUCC_FLAG_NONFINITE is set exactly when the decoded frame holds a NaN or +-Inf, which
 *    is exactly when the encoded values v = src (+ residual) held one;
 *  - raw, ebq, fp16 and bf16 carry NaN and +-Inf at their positions; int8, int4, sign and
 *    qsgd decode a block holding one to NaN throughout; topk keeps them (the largest first);
 *  - a block without one decodes to finite values, also next to FLT_MAX;
 *  - the residual stays finite, and is 0 where the value (block codecs: the block) was not;
 *  - the generic and AVX2 paths write the same frames and residuals. */
#include "q_testlib.h"

static const uint32_t all_codecs[] = {MPIUCC_CODEC_RAW,  MPIUCC_CODEC_EBQ,  MPIUCC_CODEC_FP16,
                                      MPIUCC_CODEC_BF16, MPIUCC_CODEC_INT8, MPIUCC_CODEC_INT4,
                                      MPIUCC_CODEC_SIGN, MPIUCC_CODEC_QSGD, MPIUCC_CODEC_TOPK};
static const size_t sizes[] = {0, 1, 7, 33, 300, 1029};

static int is_block_codec(uint32_t c) {
    return c == MPIUCC_CODEC_INT8 || c == MPIUCC_CODEC_INT4 || c == MPIUCC_CODEC_SIGN ||
           c == MPIUCC_CODEC_QSGD;
}
static int carries_exactly(uint32_t c) {
    return c == MPIUCC_CODEC_RAW || c == MPIUCC_CODEC_EBQ || c == MPIUCC_CODEC_FP16 ||
           c == MPIUCC_CODEC_BF16;
}

static mpiucc_params params_of(uint32_t codec, uint32_t dtype) {
    mpiucc_params p = q_params(codec, dtype);
    if (codec == MPIUCC_CODEC_EBQ) p.error_bound = 1e-3;
    if (codec == MPIUCC_CODEC_TOPK) p.levels = 4;
    if (is_block_codec(codec) || codec == MPIUCC_CODEC_TOPK) p.block_size = 32;
    return p;
}

/* Input kinds: 0 finite, 1 one NaN, 2 one +Inf and one -Inf, 3 a whole block of NaN and Inf,
 * 4 specials sprinkled at random. */
static void fill(float *x, size_t n, int kind) {
    q_fill(x, n);
    if (!n || !kind) return;
    if (kind == 1) x[q_rand() % n] = NAN;
    if (kind == 2) x[q_rand() % n] = INFINITY, x[q_rand() % n] = -INFINITY;
    if (kind == 3)
        for (size_t i = n / 2 / 32 * 32; i < n && i < n / 2 / 32 * 32 + 32; i++)
            x[i] = i % 3 ? (i % 2 ? INFINITY : -INFINITY) : NAN;
    if (kind == 4)
        for (size_t i = 0; i < n; i++)
            if (q_rand() % 23 == 0) x[i] = (float[]){NAN, INFINITY, -INFINITY}[q_rand() % 3];
}

static int finite_at(uint32_t t, const void *p, size_t i) { return isfinite(q_get(t, p, i)); }

/* One codec, dtype, size and input kind on the current SIMD level; frame and residual out. */
static void check_case(uint32_t codec, uint32_t t, size_t n, int kind, int ef, uint8_t **frame,
                       size_t *size, void **res_out) {
    mpiucc_params p = params_of(codec, t);
    float *x = malloc((n + 1) * 4), *r = malloc((n + 1) * 4);
    fill(x, n, kind);
    for (size_t i = 0; i < n; i++) r[i] = (float)(q_normal() * 1e-3);
    void *src = q_to_dtype(t, x, n), *res = ef ? q_to_dtype(t, r, n) : NULL;
    /* v as the codec sees it: src + residual, NaN/Inf where either is */
    int *bad = calloc(n + 1, sizeof(int)), any = 0;
    for (size_t i = 0; i < n; i++) {
        bad[i] = !finite_at(t, src, i);
        any |= bad[i];
    }
    mpiucc_status st;
    *frame = q_compress(&p, src, res, n, size, &st);
    CHECKF(st == MPIUCC_OK, "%s dtype %u n %zu: status %d", q_codec_name(codec), t, n, st);
    if (st != MPIUCC_OK) goto out;
    mpiucc_header h;
    CHECK(mpiucc_read_header(*frame, *size, &h) == MPIUCC_OK);
    const char *name = q_codec_name(codec);
    CHECKF(!!(h.flags & MPIUCC_FLAG_NONFINITE) == any, "%s dtype %u n %zu kind %d ef %d: flag %u",
           name, t, n, kind, ef, h.flags);
    size_t es = mpiucc_dtype_size((mpiucc_dtype)t);
    void *y = malloc(n * es + 1);
    CHECK(mpiucc_decompress(*frame, *size, y, n * es, NULL) == MPIUCC_OK);
    int any_out = 0;
    size_t b = p.block_size;
    for (size_t i = 0; i < n; i++) {
        any_out |= !finite_at(t, y, i);
        int block_bad = 0;
        if (is_block_codec(codec))
            for (size_t j = i / b * b; j < n && j < i / b * b + b; j++) block_bad |= bad[j];
        if (carries_exactly(codec) && bad[i]) {
            double u = q_get(t, src, i), v = q_get(t, y, i);
            CHECKF(isnan(u) ? isnan(v) : u == v, "%s n %zu: element %zu %g -> %g", name, n, i, u, v);
        } else if (is_block_codec(codec)) {
            CHECKF(block_bad ? isnan(q_get(t, y, i)) : finite_at(t, y, i),
                   "%s dtype %u n %zu kind %d: element %zu decodes to %g", name, t, n, kind, i,
                   q_get(t, y, i));
        } else {
            CHECKF(bad[i] || finite_at(t, y, i), "%s n %zu: finite %zu decodes to %g", name, n, i,
                   q_get(t, y, i));
        }
        if (res) {
            CHECKF(finite_at(t, res, i), "%s dtype %u n %zu ef: residual %zu is %g", name, t, n, i,
                   q_get(t, res, i));
            if (bad[i] || block_bad)
                CHECKF(q_get(t, res, i) == 0.0, "%s: residual %zu of a non-finite value is %g",
                       name, i, q_get(t, res, i));
        }
    }
    CHECKF(any_out == any, "%s dtype %u n %zu kind %d: decoded non-finite %d, input %d", name, t,
           n, kind, any_out, any);
    if (codec == MPIUCC_CODEC_TOPK && kind == 1 && n) /* the NaN ranks first: it is kept */
        CHECK(any_out);
    free(y);
out:
    *res_out = res;
    free(x), free(r), free(src), free(bad);
}

static void test_policy(void) {
    for (size_t ci = 0; ci < sizeof all_codecs / 4; ci++) {
        uint32_t c = all_codecs[ci];
        for (uint32_t t = MPIUCC_DTYPE_F32; t <= MPIUCC_DTYPE_BF16; t++) {
            if (c == MPIUCC_CODEC_EBQ && t > MPIUCC_DTYPE_F64) continue;
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
                for (int kind = 0; kind < 5; kind++)
                    for (int ef = 0; ef < 2; ef++) {
                        uint64_t seed = q_rng_state;
                        uint8_t *f[2] = {NULL, NULL};
                        size_t s[2] = {0, 0};
                        void *r[2] = {NULL, NULL};
                        int levels = mpiucc_set_simd_level(MPIUCC_SIMD_AVX2) + 1;
                        for (int level = 0; level < levels; level++) {
                            q_rng_state = seed; /* both paths see the same input */
                            mpiucc_set_simd_level((mpiucc_simd)level);
                            check_case(c, t, sizes[si], kind, ef, &f[level], &s[level], &r[level]);
                        }
                        if (levels == 2 && f[0] && f[1]) {
                            size_t n = sizes[si], es = mpiucc_dtype_size((mpiucc_dtype)t);
                            CHECKF(s[0] == s[1] && !memcmp(f[0], f[1], s[0]),
                                   "%s dtype %u n %zu kind %d ef %d: generic and AVX2 differ",
                                   q_codec_name(c), t, n, kind, ef);
                            CHECK(!ef || !memcmp(r[0], r[1], n * es));
                        }
                        for (int i = 0; i < 2; i++) free(f[i]), free(r[i]);
                    }
        }
    }
}

/* f64 values beyond the f32 range are non-finite for the block codecs (FORMAT.md). */
static void test_f64_beyond_f32(void) {
    double x[40];
    for (int i = 0; i < 40; i++) x[i] = i - 20.0;
    x[3] = 1e300;
    for (size_t ci = 4; ci < sizeof all_codecs / 4; ci++) {
        mpiucc_params p = params_of(all_codecs[ci], MPIUCC_DTYPE_F64);
        mpiucc_status st;
        size_t size;
        uint8_t *f = q_compress(&p, x, NULL, 40, &size, &st);
        CHECK(f && (f[7] & MPIUCC_FLAG_NONFINITE));
        free(f);
    }
}

/* Finite blocks next to FLT_MAX decode to finite values (int8's scale and qsgd's norm are
 * lowered by an ulp where levels * (absmax / levels) would round to Inf). */
static void test_near_flt_max(void) {
    float x[64];
    for (int level = 0; level < 2; level++) {
        if ((int)mpiucc_set_simd_level((mpiucc_simd)level) != level) continue;
        for (size_t ci = 4; ci < sizeof all_codecs / 4; ci++)
            for (uint32_t s = 1; s <= 127; s += 18) {
                for (int i = 0; i < 64; i++)
                    x[i] = (float)((q_uniform() * 0.5 + 0.5) * FLT_MAX * (i % 2 ? 1 : -1));
                x[q_rand() % 64] = FLT_MAX;
                mpiucc_params p = params_of(all_codecs[ci], MPIUCC_DTYPE_F32);
                if (p.codec == MPIUCC_CODEC_QSGD) p.levels = s;
                float y[64], r[64] = {0};
                size_t size;
                mpiucc_status st;
                uint8_t *f = q_compress(&p, x, r, 64, &size, &st);
                CHECK(f && !(f[7] & MPIUCC_FLAG_NONFINITE));
                CHECK(f && mpiucc_decompress(f, size, y, sizeof y, NULL) == MPIUCC_OK);
                for (int i = 0; f && i < 64; i++)
                    CHECKF(isfinite(y[i]) && isfinite(r[i]), "%s s %u level %d: %d is %g",
                           q_codec_name(p.codec), s, level, i, y[i]);
                free(f);
            }
    }
}

/* ebq_add: the result's flag says whether an outlier sum is NaN or Inf, also when two finite
 * outliers overflow. */
static void test_ebq_add_flag(void) {
    float a[40], b[40];
    for (int i = 0; i < 40; i++) a[i] = b[i] = (float)i;
    mpiucc_params p = params_of(MPIUCC_CODEC_EBQ, MPIUCC_DTYPE_F32);
    for (int kind = 0; kind < 3; kind++) {
        a[5] = kind == 1 ? NAN : 5.0f;
        a[9] = b[9] = kind == 2 ? 3e38f : 9.0f; /* finite outliers whose sum is Inf */
        size_t sa, sb, so;
        mpiucc_status st;
        uint8_t *fa = q_compress(&p, a, NULL, 40, &sa, &st), *fb = q_compress(&p, b, NULL, 40, &sb, &st);
        size_t cap = mpiucc_ebq_add_bound(fa, sa, fb, sb);
        uint8_t *fo = malloc(cap);
        CHECK(mpiucc_ebq_add(fa, sa, fb, sb, fo, cap, &so) == MPIUCC_OK);
        CHECKF(!!(fo[7] & MPIUCC_FLAG_NONFINITE) == (kind != 0), "ebq_add kind %d: flags %u", kind,
               fo[7]);
        free(fa), free(fb), free(fo);
    }
}

/* The flag is the encoder's: params asking for it are refused; a header with it and no
 * elements is corrupt. */
static void test_flag_rules(void) {
    mpiucc_params p = params_of(MPIUCC_CODEC_RAW, MPIUCC_DTYPE_F32);
    p.flags = MPIUCC_FLAG_NONFINITE;
    uint8_t buf[128] = {0};
    size_t size;
    CHECK(mpiucc_compress(&p, buf, 0, buf, sizeof buf, &size) == MPIUCC_ERR_ARG);
    p.flags = 0;
    CHECK(mpiucc_compress(&p, buf, 0, buf, sizeof buf, &size) == MPIUCC_OK);
    buf[7] |= MPIUCC_FLAG_NONFINITE;
    q_reseal(buf);
    mpiucc_header h;
    CHECK(mpiucc_read_header(buf, size, &h) == MPIUCC_ERR_CORRUPT);
}

int main(void) {
    test_policy();
    test_f64_beyond_f32();
    test_near_flt_max();
    test_ebq_add_flag();
    test_flag_rules();
    if (q_failures) {
        fprintf(stderr, "test_nonfinite: %d failures\n", q_failures);
        return 1;
    }
    printf("test_nonfinite: ok\n");
    return 0;
}
