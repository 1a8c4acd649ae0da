/* mpiucc_finite_stats: finite min and max, sum of squares and non-finite count in one pass. */
#include <float.h>

#include "stats.h"

/* One value of the tail: a value beyond limit in magnitude (Inf) or NaN is counted, not summed. */
static inline void add_value(stats_acc *acc, double v, double limit, size_t i, double scale) {
    if (!(fabs(v) <= limit)) {
        acc->bad++;
        return;
    }
    double s = v * scale;
    if (v < acc->lo) acc->lo = v;
    if (v > acc->hi) acc->hi = v;
    if (scale != 0) acc->lanes[i % STATS_LANES] += s * s;
}

void stats_tail_f32(const float *x, size_t i0, size_t n, double scale, stats_acc *acc) {
    for (size_t i = i0; i < n; i++) add_value(acc, x[i], FLT_MAX, i, scale);
}

void stats_tail_f64(const double *x, size_t i0, size_t n, double scale, stats_acc *acc) {
    for (size_t i = i0; i < n; i++) add_value(acc, x[i], DBL_MAX, i, scale);
}

mpiucc_status mpiucc_finite_stats(const void *src, size_t count, mpiucc_dtype dtype,
                                  double scale, mpiucc_stats *stats) {
    if (!stats || (!src && count) || !(scale >= 0 && scale <= DBL_MAX)) return MPIUCC_ERR_ARG;
    if (dtype == MPIUCC_DTYPE_F16 || dtype == MPIUCC_DTYPE_BF16) return MPIUCC_ERR_UNSUPPORTED;
    if (dtype != MPIUCC_DTYPE_F32 && dtype != MPIUCC_DTYPE_F64) return MPIUCC_ERR_ARG;
    stats_acc acc;
    memset(&acc, 0, sizeof acc);
    acc.lo = INFINITY;
    acc.hi = -INFINITY;
    int f32 = dtype == MPIUCC_DTYPE_F32;
#if MPIUCC_X86
    if (count && mpiucc_simd_now() == MPIUCC_SIMD_AVX2) {
        if (f32)
            stats_avx2_f32((const float *)src, count, scale, &acc);
        else
            stats_avx2_f64((const double *)src, count, scale, &acc);
    } else
#endif
        if (f32)
        stats_tail_f32((const float *)src, 0, count, scale, &acc);
    else
        stats_tail_f64((const double *)src, 0, count, scale, &acc);
    for (int width = STATS_LANES / 2; width; width /= 2) /* a fixed tree */
        for (int j = 0; j < width; j++) acc.lanes[j] += acc.lanes[j + width];
    int any = acc.lo <= acc.hi;
    stats->min = any ? acc.lo : 0.0;
    stats->max = any ? acc.hi : 0.0;
    stats->sum_squares = acc.lanes[0];
    stats->nonfinite = acc.bad;
    return MPIUCC_OK;
}
