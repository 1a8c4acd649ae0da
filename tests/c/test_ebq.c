/* test_ebq.c: the ebq codec. The bound on adversarial data (abs and rel, both predictors,
 * both levels where built, f32 and f64), bit-exact outliers, generic == AVX2 bytes, error
 * feedback, decode-add, the integer-domain API (quantize, pack/unpack, ebq_add). */
#include <float.h>

#include "test_util.h"

#define MAXN 4099

static int dense_built(void) {
    mpiucc_params p = MPIUCC_PARAMS_INIT;
    p.error_bound = 1;
    p.level = MPIUCC_LEVEL_DENSE;
    return mpiucc_compress_bound(&p, 1) != 0;
}

/* ---- data ---- */

enum { D_LAPLACE, D_STUDENT, D_RUNS, D_HUGE, D_SPECIAL, D_BOUNDARY, D_ZERO, D_CONST, D_SMOOTH,
       D_COUNT };

static double special_value(int f64) {
    static const double f32s[] = {0.0, -0.0, INFINITY, -INFINITY, FLT_MAX, -FLT_MAX,
                                  0x1p-149, -0x1p-149, 0x1p-126, 1e-3, -7.25, 0x1.fffffep-2};
    static const double f64s[] = {0.0, -0.0, INFINITY, -INFINITY, DBL_MAX, -DBL_MAX,
                                  0x1p-1074, -0x1p-1074, 0x1p-1022, 1e-3, -7.25, 0x1.fffffffffffffp-2};
    return (f64 ? f64s : f32s)[tu_rand_u64() % 12];
}

/* n values of kind into x (f32 or f64). */
static void make_data(int kind, size_t n, int f64, void *x) {
    double c = 0;
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        double v = 0;
        switch (kind) {
        case D_LAPLACE:
            v = (i / 64) % 5 == 3 ? 0.0 : tu_rand_laplace(1e-3);
            break;
        case D_STUDENT: v = tu_rand_student(2) * 0.01; break;
        case D_RUNS:
            if (!run) {
                run = 1 + tu_rand_u64() % 100;
                c = tu_rand_laplace(10);
            }
            run--;
            v = c;
            break;
        case D_HUGE: {
            int lo = f64 ? -1080 : -155, hi = f64 ? 1023 : 127;
            v = ldexp(1 + tu_rand_unit(), lo + (int)(tu_rand_u64() % (unsigned)(hi - lo + 1)));
            if (tu_rand_u64() & 1) v = -v;
            break;
        }
        case D_SPECIAL: v = tu_rand_u64() % 3 ? special_value(f64) : tu_rand_laplace(1); break;
        case D_BOUNDARY: { /* near the rounding boundaries of the grids of eb 1e-3 and 1 */
            double step = tu_rand_u64() & 1 ? 2e-3 : 2.0;
            v = ((double)(int)(tu_rand_u64() % 2001) - 1000.5) * step;
            if (!f64) v = (float)v;
            int k = (int)(tu_rand_u64() % 5) - 2;
            for (; k > 0; k--) v = f64 ? nextafter(v, INFINITY) : nextafterf((float)v, INFINITY);
            for (; k < 0; k++) v = f64 ? nextafter(v, -INFINITY) : nextafterf((float)v, -INFINITY);
            break;
        }
        case D_ZERO: v = 0.0; break;
        case D_CONST: v = -3.7e-3; break;
        case D_SMOOTH: v = sin((double)i * 0.01) * 5 + (double)i * 1e-3; break;
        }
        if (f64) ((double *)x)[i] = v;
        else ((float *)x)[i] = (float)v;
    }
    if (kind == D_SPECIAL && n > 2) { /* NaNs with payloads and both signs */
        uint64_t nan64 = 0x7ff0000000012345ull, nnan64 = 0xfff8000000000001ull;
        uint32_t nan32 = 0x7f812345u, nnan32 = 0xffc00001u;
        if (f64) {
            memcpy((double *)x + n / 2, &nan64, 8);
            memcpy((double *)x + n - 1, &nnan64, 8);
        } else {
            memcpy((float *)x + n / 2, &nan32, 4);
            memcpy((float *)x + n - 1, &nnan32, 4);
        }
    }
}

static double get(const void *x, int f64, size_t i) {
    return f64 ? ((const double *)x)[i] : (double)((const float *)x)[i];
}
static int same_bits(const void *a, const void *b, int f64, size_t i) {
    return f64 ? !memcmp((const double *)a + i, (const double *)b + i, 8)
               : !memcmp((const float *)a + i, (const float *)b + i, 4);
}

/* |x - y| <= eb, exactly (TwoSum for doubles; float differences are exact in double). */
static int within(double x, double y, double eb) {
    double s = x - y, bb = s - x, err = (x - (s - bb)) + (-y - bb);
    if (fabs(s) != eb) return fabs(s) < eb;
    return err == 0 || (err < 0) == (s > 0);
}

/* ---- the payload, parsed independently of the codec (FORMAT.md) ---- */

typedef struct {
    uint64_t k;
    uint64_t pos[MAXN];
    int32_t q[MAXN];
    int has_q;
} parsed;

static uint64_t varint(const uint8_t **p) {
    uint64_t v = 0;
    unsigned s = 0;
    uint8_t c;
    do {
        c = *(*p)++;
        v |= (uint64_t)(c & 0x7f) << s;
        s += 7;
    } while (c & 0x80);
    return v;
}

static void parse_frame(const uint8_t *f, size_t size, parsed *out) {
    mpiucc_header h;
    CHECK_ST(mpiucc_read_header(f, size, &h), MPIUCC_OK);
    const uint8_t *pl = f + MPIUCC_HEADER_SIZE, *end = pl + h.payload_size, *rec;
    size_t n = h.count, nb = (n + 31) / 32, es = h.dtype == MPIUCC_DTYPE_F64 ? 8 : 4;
    uint64_t k = 0, p0 = 0, p1 = 0;
    memcpy(&k, pl, 8);
    memcpy(&p0, pl + 8, 8);
    out->k = k;
    out->has_q = (h.aux & 0xff) == MPIUCC_LEVEL_FAST;
    if (out->has_q) {
        size_t used = 0;
        CHECK_ST(mpiucc_unpack_indices(pl + 16, nb + p0, out->q, n, &used), MPIUCC_OK);
        CHECK(used == nb + p0);
        if (h.aux >> 8)
            for (size_t i = 1; i < n; i++)
                out->q[i] = (int32_t)((uint32_t)out->q[i] + (uint32_t)out->q[i - 1]);
        rec = pl + 16 + nb + p0;
    } else if (h.version == 1) {
        memcpy(&p1, pl + 16, 8);
        rec = pl + 24 + p0 + p1;
    } else { /* v2: a stream size per segment of 2^20 symbols */
        size_t nseg = (n + (1u << 20) - 1) >> 20;
        for (size_t s = 0; s < nseg; s++) {
            uint64_t z;
            memcpy(&z, pl + 16 + 8 * s, 8);
            p1 += z;
        }
        rec = pl + 16 + 8 * nseg + p0 + p1;
    }
    uint64_t pos = 0;
    for (uint64_t j = 0; j < k && j < MAXN; j++) {
        pos += varint(&rec);
        out->pos[j] = pos++;
        rec += es;
    }
    CHECK(rec == end);
}

/* ---- round trips ---- */

static uint8_t fa[MAXN * 20 + 512], fg[MAXN * 20 + 512], fc[MAXN * 20 + 512];
static double ya[MAXN], yg[MAXN], rs[MAXN], rg[MAXN], ra[MAXN], dsum[MAXN];
static parsed pa;

/* Compress with both SIMD paths; check identical frames; leave the frame in fa. */
static size_t compress_both(const mpiucc_params *p, const void *x, size_t n) {
    size_t cap = mpiucc_compress_bound(p, n), sa = 0, sg = 0;
    CHECK(cap > 0 && cap <= sizeof fa);
    if (cap > sizeof fa) cap = sizeof fa;
    mpiucc_set_simd_level(MPIUCC_SIMD_GENERIC);
    CHECK_ST(mpiucc_compress(p, x, n, fg, cap, &sg), MPIUCC_OK);
    mpiucc_set_simd_level(MPIUCC_SIMD_AVX2);
    CHECK_ST(mpiucc_compress(p, x, n, fa, cap, &sa), MPIUCC_OK);
    CHECK(sa == sg && !memcmp(fa, fg, sa));
    return sa;
}

static double rel_bound(const mpiucc_params *p, const void *x, size_t n, int f64) {
    if (p->mode == MPIUCC_MODE_ABS) return p->error_bound < 0x1p1022 ? p->error_bound : 0x1p1022;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double v = get(x, f64, i);
        if (isfinite(v)) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    double eb = 0, top = fmax(fabs(lo), fabs(hi));
    if (lo <= hi && p->mode == MPIUCC_MODE_REL) eb = p->error_bound * (hi - lo);
    if (lo <= hi && p->mode == MPIUCC_MODE_RMS && top > 0) { /* mean of (v/top)^2, in order */
        double sum = 0;
        size_t count = 0;
        for (size_t i = 0; i < n; i++) {
            double v = get(x, f64, i) / top;
            if (isfinite(v)) sum += v * v, count++;
        }
        eb = p->error_bound * (top * sqrt(sum / (double)count));
    }
    return eb > 0 ? (eb < 0x1p1022 ? eb : 0x1p1022) : 0;
}

static void roundtrip(const mpiucc_params *p, const void *x, size_t n) {
    int f64 = p->dtype == MPIUCC_DTYPE_F64;
    size_t size = compress_both(p, x, n), cnt = 0;
    mpiucc_header h;
    CHECK_ST(mpiucc_read_header(fa, size, &h), MPIUCC_OK);
    double eb = rel_bound(p, x, n, f64);
    CHECK(h.count == n && h.block == 32 && h.aux == (p->level | p->predictor << 8));
    CHECK(h.bound == eb);
    if (eb > 0) CHECK(h.param == 2 * eb);
    size_t es = f64 ? 8 : 4;
    mpiucc_set_simd_level(MPIUCC_SIMD_GENERIC);
    CHECK_ST(mpiucc_decompress(fa, size, yg, n * es, &cnt), MPIUCC_OK);
    mpiucc_set_simd_level(MPIUCC_SIMD_AVX2);
    CHECK_ST(mpiucc_decompress(fa, size, ya, n * es, &cnt), MPIUCC_OK);
    CHECK(cnt == n && !memcmp(ya, yg, n * es));
    parse_frame(fa, size, &pa);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        double xi = get(x, f64, i), yi = get(ya, f64, i);
        int outlier = j < pa.k && pa.pos[j] == i;
        j += outlier;
        if (outlier) {
            CHECK(same_bits(x, ya, f64, i));
        } else {
            CHECK(isfinite(xi) && within(xi, yi, h.bound));
            if (pa.has_q) {
                double y = (double)pa.q[i] * h.param;
                CHECK(f64 ? y == yi : (float)y == (float)yi);
            }
        }
        if (outlier && pa.has_q) CHECK(pa.q[i] == 0);
    }
    CHECK(j == pa.k);
    /* a buffer one element short is refused */
    if (n) CHECK_ST(mpiucc_decompress(fa, size, yg, n * es - 1, &cnt), MPIUCC_ERR_CAPACITY);
    /* the exact frame size is enough capacity without error feedback */
    size_t s2 = 0;
    CHECK_ST(mpiucc_compress(p, x, n, fc, size, &s2), MPIUCC_OK);
    CHECK(s2 == size && !memcmp(fc, fa, size));
    if (size > 64)
        CHECK_ST(mpiucc_compress(p, x, n, fc, size - 1, &s2), MPIUCC_ERR_CAPACITY);
}

/* Error feedback: v = x + r; residual' = v - decoded exactly (0 where v is not finite). */
static void ef_check(const mpiucc_params *p, const void *x, size_t n) {
    int f64 = p->dtype == MPIUCC_DTYPE_F64;
    size_t es = f64 ? 8 : 4, cap = mpiucc_compress_bound(p, n), sa = 0, sg = 0, cnt;
    for (size_t i = 0; i < n; i++) {
        double r = tu_rand_laplace(3e-4);
        if (f64) ((double *)rs)[i] = r;
        else ((float *)rs)[i] = (float)r;
    }
    memcpy(rg, rs, n * es);
    memcpy(ra, rs, n * es);
    mpiucc_set_simd_level(MPIUCC_SIMD_GENERIC);
    CHECK_ST(mpiucc_compress_ef(p, x, rg, n, fg, cap, &sg), MPIUCC_OK);
    mpiucc_set_simd_level(MPIUCC_SIMD_AVX2);
    CHECK_ST(mpiucc_compress_ef(p, x, ra, n, fa, cap, &sa), MPIUCC_OK);
    CHECK(sa == sg && !memcmp(fa, fg, sa) && !memcmp(ra, rg, n * es));
    CHECK_ST(mpiucc_decompress(fa, sa, ya, n * es, &cnt), MPIUCC_OK);
    mpiucc_header h;
    mpiucc_read_header(fa, sa, &h);
    for (size_t i = 0; i < n; i++) {
        if (f64) {
            double v = ((const double *)x)[i] + ((double *)rs)[i], y = ((double *)ya)[i];
            double want = isfinite(v) ? v - y : 0.0;
            CHECK(((double *)ra)[i] == want);
            if (isfinite(v)) CHECK(within(v, y, h.bound) || !memcmp(&v, &y, 8));
        } else {
            float v = ((const float *)x)[i] + ((float *)rs)[i], y = ((float *)ya)[i];
            float want = isfinite(v) ? v - y : 0.0f;
            CHECK(((float *)ra)[i] == want);
            if (isfinite(v)) CHECK(within(v, y, h.bound));
        }
    }
    /* with error feedback the capacity must be the bound (the residual is never half done) */
    if (n) CHECK_ST(mpiucc_compress_ef(p, x, ra, n, fa, cap - 1, &sa), MPIUCC_ERR_CAPACITY);
}

/* decompress_add: dst + decoded, in the dtype, on both paths. */
static void add_check(const mpiucc_params *p, const void *x, size_t n) {
    int f64 = p->dtype == MPIUCC_DTYPE_F64;
    size_t es = f64 ? 8 : 4, size = compress_both(p, x, n), cnt;
    CHECK_ST(mpiucc_decompress(fa, size, ya, n * es, &cnt), MPIUCC_OK);
    for (int simd = 0; simd < 2; simd++) {
        mpiucc_set_simd_level((mpiucc_simd)simd);
        for (size_t i = 0; i < n; i++) {
            double d = i % 7 == 0 ? -0.0 : tu_rand_laplace(1.0);
            if (f64) ((double *)dsum)[i] = ((double *)rs)[i] = d;
            else ((float *)dsum)[i] = ((float *)rs)[i] = (float)d;
        }
        CHECK_ST(mpiucc_decompress_add(fa, size, dsum, n * es, &cnt), MPIUCC_OK);
        for (size_t i = 0; i < n; i++) {
            if (f64) {
                double w = ((double *)rs)[i] + ((double *)ya)[i], got = ((double *)dsum)[i];
                CHECK(isnan(w) ? isnan(got) : !memcmp(&w, &got, 8));
            } else {
                float w = ((float *)rs)[i] + ((float *)ya)[i], got = ((float *)dsum)[i];
                CHECK(isnan(w) ? isnan(got) : !memcmp(&w, &got, 4));
            }
        }
    }
}

static void test_roundtrips(void) {
    static const size_t sizes[] = {0, 1, 2, 7, 31, 32, 33, 63, 255, 257, 1000, MAXN};
    static const struct { uint32_t mode; double eb; } grids[] = {
        {MPIUCC_MODE_ABS, 1e-3}, {MPIUCC_MODE_ABS, 1.0}, {MPIUCC_MODE_ABS, 1e-7},
        {MPIUCC_MODE_ABS, 1e-30}, {MPIUCC_MODE_ABS, 3e-310}, {MPIUCC_MODE_ABS, 1e300},
        {MPIUCC_MODE_REL, 1e-4}, {MPIUCC_MODE_REL, 1e-2}, {MPIUCC_MODE_REL, 0.5},
        {MPIUCC_MODE_RMS, 1e-3}, {MPIUCC_MODE_RMS, 0.5}};
    int levels = dense_built() ? 2 : 1;
    float *x = malloc(MAXN * sizeof(double));
    for (int f64 = 0; f64 < 2; f64++)
        for (int kind = 0; kind < D_COUNT; kind++)
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
                size_t n = sizes[si];
                tu_seed(kind * 1000 + si + 77 * f64);
                make_data(kind, n, f64, x);
                for (size_t gi = 0; gi < sizeof grids / sizeof *grids; gi++)
                    for (int pred = 0; pred < 2; pred++)
                        for (int level = 0; level < levels; level++) {
                            mpiucc_params p = MPIUCC_PARAMS_INIT;
                            p.dtype = f64 ? MPIUCC_DTYPE_F64 : MPIUCC_DTYPE_F32;
                            p.mode = grids[gi].mode;
                            p.error_bound = grids[gi].eb;
                            p.predictor = (uint32_t)pred;
                            p.level = (uint32_t)level;
                            if ((n + gi) % 3 == 0) p.flags = MPIUCC_FLAG_PAYLOAD_CHECKSUM;
                            roundtrip(&p, x, n);
                            if (gi % 3 == 0 && (si % 2 || kind == D_SPECIAL)) {
                                ef_check(&p, x, n);
                                add_check(&p, x, n);
                            }
                        }
            }
    free(x);
}

/* REL on constant data stores bound 0 and gives the values back exactly. */
static void test_rel_constant(void) {
    float x[100];
    for (int c = 0; c < 3; c++) {
        float v = c == 0 ? 0.0f : c == 1 ? -2.5e-39f : 1234.5f;
        for (int i = 0; i < 100; i++) x[i] = i == 50 ? NAN : v;
        mpiucc_params p = MPIUCC_PARAMS_INIT;
        p.mode = MPIUCC_MODE_REL;
        p.error_bound = 1e-3;
        size_t size = compress_both(&p, x, 100), cnt;
        mpiucc_header h;
        CHECK_ST(mpiucc_read_header(fa, size, &h), MPIUCC_OK);
        CHECK(h.bound == 0 && h.param > 0);
        float y[100];
        CHECK_ST(mpiucc_decompress(fa, size, y, sizeof y, &cnt), MPIUCC_OK);
        CHECK(isnan(y[50]));
        for (int i = 0; i < 100; i++)
            if (i != 50) CHECK(y[i] == v);
        parse_frame(fa, size, &pa);
        CHECK(pa.k == 1 && pa.pos[0] == 50);
    }
}

static void test_params(void) {
    float x[4] = {1, 2, 3, 4};
    uint8_t buf[1024];
    size_t s;
    mpiucc_params p = MPIUCC_PARAMS_INIT;
    const double bad[] = {0.0, -1.0, NAN, INFINITY, -INFINITY};
    for (int i = 0; i < 5; i++) {
        p.error_bound = bad[i];
        p.mode = (uint32_t)(i & 1);
        CHECK_ST(mpiucc_compress(&p, x, 4, buf, sizeof buf, &s), MPIUCC_ERR_ARG);
        CHECK(mpiucc_compress_bound(&p, 4) == 0);
    }
    p = (mpiucc_params)MPIUCC_PARAMS_INIT;
    p.error_bound = 0.1;
    p.dtype = MPIUCC_DTYPE_F16;
    CHECK_ST(mpiucc_compress(&p, x, 2, buf, sizeof buf, &s), MPIUCC_ERR_UNSUPPORTED);
    p.dtype = MPIUCC_DTYPE_F32;
    p.predictor = 2;
    CHECK_ST(mpiucc_compress(&p, x, 4, buf, sizeof buf, &s), MPIUCC_ERR_ARG);
    p.predictor = 0;
    p.mode = MPIUCC_MODE_RMS + 1;
    CHECK_ST(mpiucc_compress(&p, x, 4, buf, sizeof buf, &s), MPIUCC_ERR_ARG);
    p.mode = 0;
    p.level = 2;
    CHECK_ST(mpiucc_compress(&p, x, 4, buf, sizeof buf, &s), MPIUCC_ERR_ARG);
    p.level = MPIUCC_LEVEL_DENSE;
    CHECK_ST(mpiucc_compress(&p, x, 4, buf, sizeof buf, &s),
             dense_built() ? MPIUCC_OK : MPIUCC_ERR_UNSUPPORTED);
    p.level = 0;
    p.block_size = 64;
    CHECK_ST(mpiucc_compress(&p, x, 4, buf, sizeof buf, &s), MPIUCC_ERR_ARG);
    p.block_size = 32;
    CHECK_ST(mpiucc_compress(&p, x, 4, buf, sizeof buf, &s), MPIUCC_OK);
    p.reserved[3] = 1;
    CHECK_ST(mpiucc_compress(&p, x, 4, buf, sizeof buf, &s), MPIUCC_ERR_ARG);
}

/* ---- the integer domain ---- */

static void test_pack(void) {
    static int32_t q[MAXN], q2[MAXN];
    static uint8_t buf[MAXN * 5];
    static const size_t sizes[] = {0, 1, 5, 31, 32, 33, 64, 100, 1000, MAXN};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int shape = 0; shape < 6; shape++) {
            size_t n = sizes[si], size = 0, used = 0;
            tu_seed(si * 10 + shape);
            for (size_t i = 0; i < n; i++) {
                uint64_t r = tu_rand_u64();
                int bits = shape == 5 ? (int)(r % 33) : shape * 6;
                q[i] = bits == 0 ? 0 : (int32_t)((uint32_t)(r >> 16) >> (32 - bits));
                if (r & 1) q[i] = -q[i];
                if (shape == 4 && i % 37 == 0) q[i] = i % 2 ? INT32_MIN : INT32_MAX;
            }
            CHECK(mpiucc_pack_bound(n) <= sizeof buf);
            CHECK_ST(mpiucc_pack_indices(q, n, buf, mpiucc_pack_bound(n), &size), MPIUCC_OK);
            memset(q2, 0x55, sizeof q2);
            CHECK_ST(mpiucc_unpack_indices(buf, size, q2, n, &used), MPIUCC_OK);
            CHECK(used == size && !memcmp(q, q2, n * 4));
            if (size) {
                CHECK_ST(mpiucc_unpack_indices(buf, size - 1, q2, n, &used),
                         MPIUCC_ERR_TRUNCATED);
                CHECK_ST(mpiucc_pack_indices(q, n, buf, size - 1, &used), MPIUCC_ERR_CAPACITY);
                buf[0] = 33; /* a width above 32 */
                CHECK_ST(mpiucc_unpack_indices(buf, size, q2, n, &used), MPIUCC_ERR_CORRUPT);
            }
            if (n % 32 && n > 32) { /* non-zero padding of the last block */
                size_t nb = (n + 31) / 32;
                for (size_t i = 0; i < n; i++) q[i] = -1; /* zigzag 1: width 1 */
                CHECK_ST(mpiucc_pack_indices(q, n, buf, sizeof buf, &size), MPIUCC_OK);
                buf[size - 1] |= 0x80; /* the last block is 1 bit wide: its last bit is padding */
                CHECK(buf[nb - 1] == 1);
                CHECK_ST(mpiucc_unpack_indices(buf, size, q2, n, &used), MPIUCC_ERR_CORRUPT);
            }
        }
}

static void test_quantize(void) {
    static float x[MAXN];
    static int32_t q[MAXN];
    static uint64_t pos[MAXN];
    tu_seed(5);
    make_data(D_SPECIAL, MAXN, 0, x);
    mpiucc_params p = MPIUCC_PARAMS_INIT;
    p.error_bound = 1e-3;
    size_t k = 0, k2 = 0;
    for (int simd = 0; simd < 2; simd++) {
        mpiucc_set_simd_level((mpiucc_simd)simd);
        CHECK_ST(mpiucc_ebq_quantize(&p, x, MAXN, q, pos, MAXN, &k), MPIUCC_OK);
        size_t size = compress_both(&p, x, MAXN);
        parse_frame(fa, size, &pa);
        CHECK(k == pa.k && !memcmp(pos, pa.pos, k * 8) && !memcmp(q, pa.q, MAXN * 4));
        CHECK(k > 2);
        CHECK_ST(mpiucc_ebq_quantize(&p, x, MAXN, q, pos, 2, &k2), MPIUCC_ERR_CAPACITY);
        CHECK(k2 == k);
    }
    p.mode = MPIUCC_MODE_REL;
    CHECK_ST(mpiucc_ebq_quantize(&p, x, MAXN, q, pos, MAXN, &k), MPIUCC_ERR_ARG);
}

static double dec_val(const void *y, int f64, size_t i) { return get(y, f64, i); }

/* ebq_add of frames a and b (already in fa and fg): exact index sums, outliers a + b. */
static void add_frames_check(const void *xa, const void *xb, size_t n, const mpiucc_params *pa_,
                             const mpiucc_params *pb_) {
    int f64 = pa_->dtype == MPIUCC_DTYPE_F64;
    size_t es = f64 ? 8 : 4, sa = 0, sb = 0, sr = 0, cnt;
    size_t cap = mpiucc_compress_bound(pa_, n);
    CHECK_ST(mpiucc_compress(pa_, xa, n, fa, cap, &sa), MPIUCC_OK);
    CHECK_ST(mpiucc_compress(pb_, xb, n, fg, mpiucc_compress_bound(pb_, n), &sb), MPIUCC_OK);
    size_t rcap = mpiucc_ebq_add_bound(fa, sa, fg, sb);
    CHECK(rcap > 0 && rcap <= sizeof fc);
    CHECK_ST(mpiucc_ebq_add(fa, sa, fg, sb, fc, rcap, &sr), MPIUCC_OK);
    { /* the other SIMD path writes the same bytes */
        static uint8_t other[sizeof fc];
        size_t so = 0;
        mpiucc_simd was = mpiucc_simd_level();
        mpiucc_set_simd_level(was == MPIUCC_SIMD_AVX2 ? MPIUCC_SIMD_GENERIC : MPIUCC_SIMD_AVX2);
        CHECK_ST(mpiucc_ebq_add(fa, sa, fg, sb, other, rcap, &so), MPIUCC_OK);
        CHECK(so == sr && !memcmp(other, fc, sr));
        mpiucc_set_simd_level(was);
    }
    mpiucc_header ha, hb, hr;
    mpiucc_read_header(fa, sa, &ha);
    mpiucc_read_header(fg, sb, &hb);
    CHECK_ST(mpiucc_read_header(fc, sr, &hr), MPIUCC_OK);
    CHECK(hr.bound == ha.bound + hb.bound && hr.aux == ha.aux && hr.param == ha.param);
    CHECK_ST(mpiucc_decompress(fa, sa, ya, n * es, &cnt), MPIUCC_OK);
    CHECK_ST(mpiucc_decompress(fg, sb, yg, n * es, &cnt), MPIUCC_OK);
    CHECK_ST(mpiucc_decompress(fc, sr, dsum, n * es, &cnt), MPIUCC_OK);
    static int32_t qa[MAXN], qb[MAXN];
    static uint64_t oa[MAXN], ob[MAXN];
    size_t ka, kb, ja = 0, jb = 0;
    mpiucc_params pq = *pa_;
    pq.level = 0;
    CHECK_ST(mpiucc_ebq_quantize(&pq, xa, n, qa, oa, MAXN, &ka), MPIUCC_OK);
    CHECK_ST(mpiucc_ebq_quantize(&pq, xb, n, qb, ob, MAXN, &kb), MPIUCC_OK);
    for (size_t i = 0; i < n; i++) {
        int ia = ja < ka && oa[ja] == i, ib = jb < kb && ob[jb] == i;
        ja += ia;
        jb += ib;
        double got = dec_val(dsum, f64, i), want;
        if (ia || ib) {
            want = f64 ? dec_val(ya, f64, i) + dec_val(yg, f64, i)
                       : (double)((float)dec_val(ya, f64, i) + (float)dec_val(yg, f64, i));
        } else {
            want = (double)(qa[i] + qb[i]) * ha.param;
            if (!f64) want = (float)want;
        }
        CHECK(isnan(want) ? isnan(got) : want == got);
    }
    if (sr > 64) CHECK_ST(mpiucc_ebq_add(fa, sa, fg, sb, fc, sr - 1, &cnt), MPIUCC_ERR_CAPACITY);
}

static void test_ebq_add(void) {
    static double xa[MAXN], xb[MAXN];
    int levels = dense_built() ? 2 : 1;
    for (int f64 = 0; f64 < 2; f64++)
        for (int combo = 0; combo < 4 * levels * levels; combo++) {
            size_t n = combo % 3 == 0 ? MAXN : (size_t)(combo * 37 + 1);
            tu_seed(combo + 100 * f64);
            make_data(combo % 2 ? D_SPECIAL : D_LAPLACE, n, f64, xa);
            make_data(D_STUDENT, n, f64, xb);
            mpiucc_params p = MPIUCC_PARAMS_INIT, q;
            p.dtype = f64 ? MPIUCC_DTYPE_F64 : MPIUCC_DTYPE_F32;
            p.error_bound = 1e-4;
            p.predictor = combo & 1;
            p.level = (uint32_t)((combo >> 2) % levels);
            q = p;
            q.predictor = (combo >> 1) & 1;
            q.level = (uint32_t)((combo >> 3) % levels);
            if (combo & 2) p.flags = MPIUCC_FLAG_PAYLOAD_CHECKSUM;
            for (int simd = 0; simd < 2; simd++) {
                mpiucc_set_simd_level((mpiucc_simd)simd);
                add_frames_check(xa, xb, n, &p, &q);
            }
        }
    { /* empty frames add to an empty frame */
        mpiucc_params p = MPIUCC_PARAMS_INIT;
        p.error_bound = 0.5;
        size_t s1 = 0, s2 = 0, cnt = 1;
        CHECK_ST(mpiucc_compress(&p, xa, 0, fa, sizeof fa, &s1), MPIUCC_OK);
        CHECK_ST(mpiucc_ebq_add(fa, s1, fa, s1, fc, sizeof fc, &s2), MPIUCC_OK);
        CHECK_ST(mpiucc_decompress(fc, s2, NULL, 0, &cnt), MPIUCC_OK);
        CHECK(cnt == 0);
    }
    /* mismatches */
    float x[64] = {0};
    for (int i = 0; i < 64; i++) x[i] = (float)i;
    mpiucc_params p = MPIUCC_PARAMS_INIT;
    p.error_bound = 0.5;
    size_t s1, s2, s3;
    CHECK_ST(mpiucc_compress(&p, x, 64, fa, sizeof fa, &s1), MPIUCC_OK);
    p.error_bound = 0.25;
    CHECK_ST(mpiucc_compress(&p, x, 64, fg, sizeof fg, &s2), MPIUCC_OK);
    CHECK_ST(mpiucc_ebq_add(fa, s1, fg, s2, fc, sizeof fc, &s3), MPIUCC_ERR_MISMATCH);
    CHECK(mpiucc_ebq_add_bound(fa, s1, fg, s2) == 0);
    p.error_bound = 0.5;
    CHECK_ST(mpiucc_compress(&p, x, 63, fg, sizeof fg, &s2), MPIUCC_OK);
    CHECK_ST(mpiucc_ebq_add(fa, s1, fg, s2, fc, sizeof fc, &s3), MPIUCC_ERR_MISMATCH);
    p.codec = MPIUCC_CODEC_RAW;
    CHECK_ST(mpiucc_compress(&p, x, 64, fg, sizeof fg, &s2), MPIUCC_OK);
    CHECK_ST(mpiucc_ebq_add(fa, s1, fg, s2, fc, sizeof fc, &s3), MPIUCC_ERR_MISMATCH);
    p.codec = MPIUCC_CODEC_EBQ;
    p.dtype = MPIUCC_DTYPE_F64;
    double xd[64] = {0};
    CHECK_ST(mpiucc_compress(&p, xd, 64, fg, sizeof fg, &s2), MPIUCC_OK);
    CHECK_ST(mpiucc_ebq_add(fa, s1, fg, s2, fc, sizeof fc, &s3), MPIUCC_ERR_MISMATCH);
    CHECK_ST(mpiucc_ebq_add(fa, s1 - 1, fa, s1, fc, sizeof fc, &s3), MPIUCC_ERR_TRUNCATED);
    /* overflow: doubling indices near 2^23 overflows int32 after 8 doublings */
    for (int i = 0; i < 64; i++) x[i] = (i % 2 ? -1.0f : 1.0f) * 8.0e6f;
    x[7] = NAN;
    p = (mpiucc_params)MPIUCC_PARAMS_INIT;
    p.error_bound = 0.5;
    p.predictor = MPIUCC_PREDICTOR_DELTA;
    CHECK_ST(mpiucc_compress(&p, x, 64, fa, sizeof fa, &s1), MPIUCC_OK);
    int doublings = 0;
    mpiucc_status st = MPIUCC_OK;
    for (; doublings < 12; doublings++) {
        st = mpiucc_ebq_add(fa, s1, fa, s1, fc, sizeof fc, &s3);
        if (st != MPIUCC_OK) break;
        float y[64];
        size_t cnt;
        CHECK_ST(mpiucc_decompress(fc, s3, y, sizeof y, &cnt), MPIUCC_OK);
        for (int i = 0; i < 64; i++)
            if (i != 7) CHECK(y[i] == (float)((double)x[i] * (double)(2 << doublings)));
        CHECK(isnan(y[7]));
        memcpy(fa, fc, s3);
        s1 = s3;
    }
    CHECK_ST(st, MPIUCC_ERR_OVERFLOW);
    CHECK(doublings == 8);
}

/* Frames at odd addresses: the same bytes, the same values. */
static void test_unaligned(void) {
    static double x[MAXN];
    static uint8_t buf[sizeof fa + 8], buf2[sizeof fa + 8], sum[2 * sizeof fa];
    for (int f64 = 0; f64 < 2; f64++)
        for (int simd = 0; simd < 2; simd++) {
            mpiucc_set_simd_level((mpiucc_simd)simd);
            tu_seed(3);
            make_data(D_SPECIAL, 1000, f64, x);
            mpiucc_params p = MPIUCC_PARAMS_INIT;
            p.dtype = f64 ? MPIUCC_DTYPE_F64 : MPIUCC_DTYPE_F32;
            p.error_bound = 1e-2;
            p.predictor = (uint32_t)simd;
            size_t size = compress_both(&p, x, 1000), s2 = 0, s3 = 0, cnt;
            for (int off = 1; off < 8; off += 2) {
                CHECK_ST(mpiucc_compress(&p, x, 1000, buf + off, sizeof fa, &s2), MPIUCC_OK);
                CHECK(s2 == size && !memcmp(buf + off, fa, size));
                CHECK_ST(mpiucc_decompress(buf + off, s2, yg, sizeof yg, &cnt), MPIUCC_OK);
                CHECK_ST(mpiucc_decompress(fa, size, ya, sizeof ya, &cnt), MPIUCC_OK);
                CHECK(!memcmp(ya, yg, cnt * (f64 ? 8 : 4)));
                memcpy(buf2 + off + 1, fa, size);
                CHECK_ST(mpiucc_ebq_add(buf + off, s2, buf2 + off + 1, size, sum + off,
                                        sizeof sum - 8, &s3),
                         MPIUCC_OK);
                CHECK_ST(mpiucc_ebq_add(fa, size, fa, size, fc, sizeof fc, &cnt), MPIUCC_OK);
                CHECK(cnt == s3 && !memcmp(fc, sum + off, s3));
            }
        }
}

int main(void) {
    printf("ebq: simd %s, dense level %s\n", mpiucc_simd_name(mpiucc_simd_level()),
           dense_built() ? "built" : "not built");
    test_params();
    test_pack();
    test_quantize();
    test_rel_constant();
    test_roundtrips();
    test_ebq_add();
    test_unaligned();
    return tu_report("test_ebq");
}
