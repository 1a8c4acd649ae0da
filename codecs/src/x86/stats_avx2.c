/* mpiucc_finite_stats' AVX2 body: 16 elements a step, squares in the lanes stats.c uses, so
 * both paths give the same bits. First without masks, checking that every value was finite;
 * where one was not, again with masks: a value that is not finite is made a NaN, which min
 * and max pass over (they return their second operand when either is NaN), and squared as 0. */
#include <float.h>
#include <immintrin.h>

#include "../stats.h"

static inline __m256d min4(const __m256d v[4]) {
    return _mm256_min_pd(_mm256_min_pd(v[0], v[1]), _mm256_min_pd(v[2], v[3]));
}

static inline __m256d max4(const __m256d v[4]) {
    return _mm256_max_pd(_mm256_max_pd(v[0], v[1]), _mm256_max_pd(v[2], v[3]));
}

static void finish(const __m256d acc[4], double lo, double hi, uint64_t bad, stats_acc *out) {
    double lanes[STATS_LANES];
    for (int k = 0; k < 4; k++) _mm256_storeu_pd(lanes + 4 * k, acc[k]);
    for (int j = 0; j < STATS_LANES; j++) out->lanes[j] += lanes[j];
    if (lo < out->lo) out->lo = lo;
    if (hi > out->hi) out->hi = hi;
    out->bad += bad;
}

/* finish() after reducing the f32 lanes' minima and maxima (NaN lanes passed over). */
static void finish_f32(const __m256d acc[4], const __m256 vlo[2], const __m256 vhi[2],
                       uint64_t bad, stats_acc *out) {
    float a[8], b[8];
    _mm256_storeu_ps(a, _mm256_min_ps(vlo[0], vlo[1]));
    _mm256_storeu_ps(b, _mm256_max_ps(vhi[0], vhi[1]));
    double lo = INFINITY, hi = -INFINITY;
    for (int j = 0; j < 8; j++) {
        if (a[j] < lo) lo = a[j];
        if (b[j] > hi) hi = b[j];
    }
    finish(acc, lo, hi, bad, out);
}

/* The same for f64 lanes. */
static void finish_f64(const __m256d acc[4], const __m256d vlo[4], const __m256d vhi[4],
                       uint64_t bad, stats_acc *out) {
    double a[4], b[4], lo = INFINITY, hi = -INFINITY;
    _mm256_storeu_pd(a, min4(vlo));
    _mm256_storeu_pd(b, max4(vhi));
    for (int j = 0; j < 4; j++) {
        if (a[j] < lo) lo = a[j];
        if (b[j] > hi) hi = b[j];
    }
    finish(acc, lo, hi, bad, out);
}

/* The f32 body when every value is finite: min, max and squares without masks, and a check
 * (the largest magnitude's bits) that no value was NaN or Inf. Returns 0, having touched
 * nothing in out, when one was: the masked body then runs instead. */
static inline size_t fast_f32(const float *x, size_t n, double scale, int squares, int scaled,
                              stats_acc *out) {
    const __m256i absm = _mm256_set1_epi32(0x7fffffff);
    const __m256d vs = _mm256_set1_pd(scale);
    __m256 vlo[2] = {_mm256_set1_ps(INFINITY), _mm256_set1_ps(INFINITY)};
    __m256 vhi[2] = {_mm256_set1_ps(-INFINITY), _mm256_set1_ps(-INFINITY)};
    __m256i top = _mm256_setzero_si256();
    __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                      _mm256_setzero_pd()};
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int h = 0; h < 2; h++) {
            __m256 v = _mm256_loadu_ps(x + i + 8 * h);
            top = _mm256_max_epu32(top, _mm256_and_si256(_mm256_castps_si256(v), absm));
            vlo[h] = _mm256_min_ps(vlo[h], v);
            vhi[h] = _mm256_max_ps(vhi[h], v);
            if (!squares) continue;
            __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
            __m256d b = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
            if (scaled) a = _mm256_mul_pd(a, vs), b = _mm256_mul_pd(b, vs);
            acc[2 * h] = _mm256_add_pd(acc[2 * h], _mm256_mul_pd(a, a));
            acc[2 * h + 1] = _mm256_add_pd(acc[2 * h + 1], _mm256_mul_pd(b, b));
        }
    }
    uint32_t t[8];
    _mm256_storeu_si256((__m256i *)t, top);
    for (int j = 0; j < 8; j++)
        if (t[j] >= 0x7f800000u) return 0;
    finish_f32(acc, vlo, vhi, 0, out);
    return i;
}

/* The masked f32 body: squares = 0 skips the squares, scaled = 0 the multiplication by 1. */
static inline size_t body_f32(const float *x, size_t n, double scale, int squares, int scaled,
                              stats_acc *out) {
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 fmax = _mm256_set1_ps(FLT_MAX);
    const __m256d vs = _mm256_set1_pd(scale);
    __m256 vlo[2] = {_mm256_set1_ps(INFINITY), _mm256_set1_ps(INFINITY)};
    __m256 vhi[2] = {_mm256_set1_ps(-INFINITY), _mm256_set1_ps(-INFINITY)};
    __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                      _mm256_setzero_pd()};
    uint64_t bad = 0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int h = 0; h < 2; h++) {
            __m256 v = _mm256_loadu_ps(x + i + 8 * h);
            __m256 nf = _mm256_cmp_ps(_mm256_and_ps(v, absm), fmax, _CMP_NLE_UQ);
            int mask = _mm256_movemask_ps(nf);
            if (mask) bad += (uint64_t)__builtin_popcount(mask);
            __m256 nan = _mm256_or_ps(v, nf);
            vlo[h] = _mm256_min_ps(nan, vlo[h]);
            vhi[h] = _mm256_max_ps(nan, vhi[h]);
            if (!squares) continue;
            __m256 z = _mm256_andnot_ps(nf, v);
            __m256d a = _mm256_cvtps_pd(_mm256_castps256_ps128(z));
            __m256d b = _mm256_cvtps_pd(_mm256_extractf128_ps(z, 1));
            if (scaled) a = _mm256_mul_pd(a, vs), b = _mm256_mul_pd(b, vs);
            acc[2 * h] = _mm256_add_pd(acc[2 * h], _mm256_mul_pd(a, a));
            acc[2 * h + 1] = _mm256_add_pd(acc[2 * h + 1], _mm256_mul_pd(b, b));
        }
    }
    finish_f32(acc, vlo, vhi, bad, out);
    return i;
}

/* The f64 body when every value is finite (as fast_f32). */
static inline size_t fast_f64(const double *x, size_t n, double scale, int squares,
                              int scaled, stats_acc *out) {
    const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    const __m256d dmax = _mm256_set1_pd(DBL_MAX), vs = _mm256_set1_pd(scale);
    const __m256d pinf = _mm256_set1_pd(INFINITY), ninf = _mm256_set1_pd(-INFINITY);
    __m256d vlo[4] = {pinf, pinf, pinf, pinf}, vhi[4] = {ninf, ninf, ninf, ninf};
    __m256d bad = _mm256_setzero_pd();
    __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                      _mm256_setzero_pd()};
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int k = 0; k < 4; k++) {
            __m256d v = _mm256_loadu_pd(x + i + 4 * k);
            bad = _mm256_or_pd(bad, _mm256_cmp_pd(_mm256_and_pd(v, absm), dmax, _CMP_NLE_UQ));
            vlo[k] = _mm256_min_pd(vlo[k], v);
            vhi[k] = _mm256_max_pd(vhi[k], v);
            if (!squares) continue;
            __m256d z = scaled ? _mm256_mul_pd(v, vs) : v;
            acc[k] = _mm256_add_pd(acc[k], _mm256_mul_pd(z, z));
        }
    }
    if (_mm256_movemask_pd(bad)) return 0;
    finish_f64(acc, vlo, vhi, 0, out);
    return i;
}

static inline size_t body_f64(const double *x, size_t n, double scale, int squares,
                              int scaled, stats_acc *out) {
    const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    const __m256d dmax = _mm256_set1_pd(DBL_MAX), vs = _mm256_set1_pd(scale);
    const __m256d pinf = _mm256_set1_pd(INFINITY), ninf = _mm256_set1_pd(-INFINITY);
    __m256d vlo[4] = {pinf, pinf, pinf, pinf}, vhi[4] = {ninf, ninf, ninf, ninf};
    __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                      _mm256_setzero_pd()};
    uint64_t bad = 0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int k = 0; k < 4; k++) {
            __m256d v = _mm256_loadu_pd(x + i + 4 * k);
            __m256d nf = _mm256_cmp_pd(_mm256_and_pd(v, absm), dmax, _CMP_NLE_UQ);
            int mask = _mm256_movemask_pd(nf);
            if (mask) bad += (uint64_t)__builtin_popcount(mask);
            __m256d nan = _mm256_or_pd(v, nf);
            vlo[k] = _mm256_min_pd(nan, vlo[k]);
            vhi[k] = _mm256_max_pd(nan, vhi[k]);
            if (!squares) continue;
            __m256d z = _mm256_andnot_pd(nf, v);
            if (scaled) z = _mm256_mul_pd(z, vs);
            acc[k] = _mm256_add_pd(acc[k], _mm256_mul_pd(z, z));
        }
    }
    finish_f64(acc, vlo, vhi, bad, out);
    return i;
}

void stats_avx2_f32(const float *x, size_t n, double scale, stats_acc *out) {
    size_t i = scale == 0   ? fast_f32(x, n, scale, 0, 0, out)
               : scale == 1 ? fast_f32(x, n, scale, 1, 0, out)
                            : fast_f32(x, n, scale, 1, 1, out);
    if (!i && n >= 16) /* a NaN or an Inf: once more, with masks */
        i = scale == 0   ? body_f32(x, n, scale, 0, 0, out)
            : scale == 1 ? body_f32(x, n, scale, 1, 0, out)
                         : body_f32(x, n, scale, 1, 1, out);
    stats_tail_f32(x, i, n, scale, out);
}

void stats_avx2_f64(const double *x, size_t n, double scale, stats_acc *out) {
    size_t i = scale == 0   ? fast_f64(x, n, scale, 0, 0, out)
               : scale == 1 ? fast_f64(x, n, scale, 1, 0, out)
                            : fast_f64(x, n, scale, 1, 1, out);
    if (!i && n >= 16) /* a NaN or an Inf: once more, with masks */
        i = scale == 0   ? body_f64(x, n, scale, 0, 0, out)
            : scale == 1 ? body_f64(x, n, scale, 1, 0, out)
                         : body_f64(x, n, scale, 1, 1, out);
    stats_tail_f64(x, i, n, scale, out);
}
