/* Fuzz target: ebq round trips on adversarial data (NaN, Inf, subnormals, +-0, huge ranges).
 * Input: byte 0 = options (bit 0 f64, bit 1 REL, bit 2 dense, bit 3 delta, bit 4 payload
 * checksum, bit 5 error feedback), byte 1 = the bound (an index into a table, or with bit 7
 * set a raw f64 from bytes 2-9), then the elements. Aborts when a finite value comes back
 * outside the bound, a non-finite one not bit-exact, the header's bound is not the documented
 * one, compressing twice or on the generic and AVX2 paths gives different bytes, or error
 * feedback differs from compressing v = src + residual, or three threads give other bytes. */
#include <float.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const double bounds[] = {1e-3, 1.0, 1e-7, 1e-30, 3e-310, 1e300, DBL_MAX, 0x1p-1074,
                                1e-4, 0.5, 0.25, 1e-2, 2.0, 1e10, 0x1p-149, 0x1p1023};
#define NBOUNDS (sizeof bounds / sizeof bounds[0])

static double get(const void *x, int f64, size_t i) {
    return f64 ? ((const double *)x)[i] : (double)((const float *)x)[i];
}

/* The bound the header must carry (FORMAT.md: REL or RMS resolved over the finite values in
 * f64, lowered to 2^1022; 0 when they give no positive bound). */
static double expected_bound(const mpiucc_params *p, const void *x, size_t n, int f64) {
    double eb = p->error_bound;
    if (p->mode == MPIUCC_MODE_REL) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            double v = get(x, f64, i);
            if (isfinite(v)) {
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
        }
        eb = lo <= hi ? eb * (hi - lo) : 0.0;
        if (!(eb > 0)) return 0.0;
    } else if (p->mode == MPIUCC_MODE_RMS) {
        double top = 0, sum = 0;
        size_t count = 0;
        for (size_t i = 0; i < n; i++)
            if (isfinite(get(x, f64, i))) top = fmax(top, fabs(get(x, f64, i)));
        for (size_t i = 0; i < n && top > 0; i++) {
            double v = get(x, f64, i) / top; /* mean of (v/top)^2 in index order, as FORMAT.md */
            if (isfinite(v)) sum += v * v, count++;
        }
        eb = top > 0 ? eb * (top * sqrt(sum / (double)count)) : 0.0;
        if (!(eb > 0)) return 0.0;
    }
    return eb < 0x1p1022 ? eb : 0x1p1022;
}

/* Compress on the given SIMD level; returns the frame size (0: the status was not OK). */
static size_t compress_at(mpiucc_simd level, const mpiucc_params *p, const void *x, void *res,
                          size_t n, uint8_t *out, size_t cap) {
    size_t size = 0;
    mpiucc_set_simd_level(level);
    mpiucc_status st = res ? mpiucc_compress_ef(p, x, res, n, out, cap, &size)
                           : mpiucc_compress(p, x, n, out, cap, &size);
    FZ_ASSERT(st == MPIUCC_OK);
    FZ_ASSERT(size <= cap);
    return size;
}

static void check_values(const void *x, const void *y, size_t n, int f64, double eb) {
    size_t es = f64 ? 8 : 4;
    for (size_t i = 0; i < n; i++) {
        double xi = get(x, f64, i), yi = get(y, f64, i);
        int exact = !memcmp((const uint8_t *)x + i * es, (const uint8_t *)y + i * es, es);
        if (isfinite(xi))
            FZ_ASSERT(exact || fz_within(xi, yi, eb));
        else
            FZ_ASSERT(exact); /* NaN (with its payload) and Inf are carried bit-exact */
    }
}

/* Error feedback: the frame is compress(v), v = x + r in the dtype; r' = v - y (0 where v is
 * not finite). */
static void check_ef(const mpiucc_params *p, const void *x, size_t n, int f64, size_t cap) {
    size_t es = f64 ? 8 : 4;
    uint8_t *r0 = (uint8_t *)malloc(n * es + 1), *rg = (uint8_t *)malloc(n * es + 1),
            *ra = (uint8_t *)malloc(n * es + 1), *v = (uint8_t *)malloc(n * es + 1),
            *y = (uint8_t *)malloc(n * es + 1), *fv = (uint8_t *)malloc(cap),
            *fg = (uint8_t *)malloc(cap), *fa = (uint8_t *)malloc(cap);
    FZ_ASSERT(r0 && rg && ra && v && y && fv && fg && fa);
    /* The residual: the data reversed and scaled down, never NaN (which NaN x + r gives when
     * both are NaN is up to the compiler's operand order, not the codec's). */
    for (size_t i = 0; i < n; i++) {
        if (f64) {
            double r = ((const double *)x)[n - 1 - i] * 0x1p-12;
            r = isnan(r) ? 0.5 : r;
            ((double *)r0)[i] = r;
            ((double *)v)[i] = ((const double *)x)[i] + r;
        } else {
            float r = ((const float *)x)[n - 1 - i] * 0x1p-12f;
            r = isnan(r) ? 0.5f : r;
            ((float *)r0)[i] = r;
            ((float *)v)[i] = ((const float *)x)[i] + r;
        }
    }
    memcpy(rg, r0, n * es);
    memcpy(ra, r0, n * es);
    size_t sv = compress_at(MPIUCC_SIMD_AVX2, p, v, NULL, n, fv, cap);
    size_t sg = compress_at(MPIUCC_SIMD_GENERIC, p, x, rg, n, fg, cap);
    size_t sa = compress_at(MPIUCC_SIMD_AVX2, p, x, ra, n, fa, cap);
    FZ_ASSERT(sg == sv && !memcmp(fg, fv, sv));
    FZ_ASSERT(sa == sv && !memcmp(fa, fv, sv));
    FZ_ASSERT(!memcmp(rg, ra, n * es));
    FZ_ASSERT(mpiucc_decompress(fv, sv, y, n * es, NULL) == MPIUCC_OK);
    for (size_t i = 0; i < n; i++) {
        if (f64) {
            double vi = ((double *)v)[i], want = isfinite(vi) ? vi - ((double *)y)[i] : 0.0;
            FZ_ASSERT(!memcmp(&want, (double *)ra + i, 8) || (want == 0 && ((double *)ra)[i] == 0));
        } else {
            float vi = ((float *)v)[i], want = isfinite(vi) ? vi - ((float *)y)[i] : 0.0f;
            FZ_ASSERT(!memcmp(&want, (float *)ra + i, 4) || (want == 0 && ((float *)ra)[i] == 0));
        }
    }
    free(r0), free(rg), free(ra), free(v), free(y), free(fv), free(fg), free(fa);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 10) return 0;
    unsigned opt = data[0];
    int f64 = opt & 1;
    mpiucc_params p = MPIUCC_PARAMS_INIT;
    p.dtype = f64 ? MPIUCC_DTYPE_F64 : MPIUCC_DTYPE_F32;
    p.mode = (opt >> 5) & 1 ? MPIUCC_MODE_RMS : (opt >> 1) & 1;
    p.level = (opt >> 2) & 1;
    p.predictor = (opt >> 3) & 1;
    p.flags = (opt >> 4) & 1;
    if (data[1] & 0x80) {
        memcpy(&p.error_bound, data + 2, 8); /* host order is fine: only the value matters */
    } else {
        p.error_bound = bounds[data[1] % NBOUNDS];
    }
    size_t es = f64 ? 8 : 4, n = (size - 10) / es;
    void *x = malloc(n * es + 1);
    FZ_ASSERT(x);
    memcpy(x, data + 10, n * es);
    size_t cap = mpiucc_compress_bound(&p, n);
    if (!(p.error_bound > 0 && p.error_bound <= DBL_MAX)) { /* invalid bounds are refused */
        uint8_t small[MPIUCC_HEADER_SIZE];
        size_t sz;
        FZ_ASSERT(cap == 0);
        FZ_ASSERT(mpiucc_compress(&p, x, n, small, sizeof small, &sz) == MPIUCC_ERR_ARG);
        free(x);
        return 0;
    }
    FZ_ASSERT(cap > MPIUCC_HEADER_SIZE);
    uint8_t *fg = (uint8_t *)malloc(cap), *fa = (uint8_t *)malloc(cap), *f2 = (uint8_t *)malloc(cap);
    void *yg = malloc(n * es + 1), *ya = malloc(n * es + 1);
    FZ_ASSERT(fg && fa && f2 && yg && ya);
    size_t sg = compress_at(MPIUCC_SIMD_GENERIC, &p, x, NULL, n, fg, cap);
    size_t sa = compress_at(MPIUCC_SIMD_AVX2, &p, x, NULL, n, fa, cap);
    mpiucc_params p3 = p; /* three threads: segments of 256 elements from 512 elements on */
    p3.threads = 3;
    size_t s2 = compress_at(MPIUCC_SIMD_AVX2, &p3, x, NULL, n, f2, sa); /* exact size suffices */
    FZ_ASSERT(sg == sa && !memcmp(fg, fa, sa)); /* generic == AVX2 */
    FZ_ASSERT(s2 == sa && !memcmp(f2, fa, sa)); /* deterministic, whatever the threads */
    mpiucc_header h;
    FZ_ASSERT(mpiucc_read_header(fa, sa, &h) == MPIUCC_OK);
    double eb = expected_bound(&p, x, n, f64);
    FZ_ASSERT(h.count == n && !memcmp(&h.bound, &eb, 8));
    if (eb > 0) FZ_ASSERT(h.param == 2 * eb);
    size_t cnt = 0;
    mpiucc_set_simd_level(MPIUCC_SIMD_GENERIC);
    FZ_ASSERT(mpiucc_decompress(fa, sa, yg, n * es, &cnt) == MPIUCC_OK && cnt == n);
    mpiucc_set_simd_level(MPIUCC_SIMD_AVX2);
    FZ_ASSERT(mpiucc_decompress_threads(fa, sa, ya, n * es, NULL, 0, 0, 3, &cnt) == MPIUCC_OK &&
              cnt == n);
    FZ_ASSERT(!memcmp(yg, ya, n * es));
    check_values(x, ya, n, f64, h.bound);
    if (opt & 0x20) check_ef(&p, x, n, f64, cap);
    free(x), free(fg), free(fa), free(f2), free(yg), free(ya);
    return 0;
}
