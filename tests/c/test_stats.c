/* mpiucc_finite_stats: argument errors, and the same bits on the generic and AVX2 paths over
 * sizes around the vector width with NaN, +-Inf, +-0, denormals and the largest values. */
#include <float.h>

#include "test_util.h"

static const size_t sizes[] = {0, 1, 7, 15, 16, 17, 31, 33, 100, 1029};

static void fill(double *x, size_t n) {
    static const double special[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-310, FLT_MAX, 1e300};
    for (size_t i = 0; i < n; i++) {
        x[i] = (tu_rand_unit() - 0.5) * 1e3;
        if (tu_rand_u64() % 7 == 0) x[i] = special[tu_rand_u64() % 8];
    }
}

static void check_levels(mpiucc_dtype t, const void *x, size_t n, double scale) {
    mpiucc_stats g, v;
    mpiucc_set_simd_level(MPIUCC_SIMD_GENERIC);
    CHECK_ST(mpiucc_finite_stats(x, n, t, scale, &g), MPIUCC_OK);
    if (mpiucc_set_simd_level(MPIUCC_SIMD_AVX2) != MPIUCC_SIMD_AVX2) return;
    CHECK_ST(mpiucc_finite_stats(x, n, t, scale, &v), MPIUCC_OK);
    CHECK(g.min == v.min && g.max == v.max && g.nonfinite == v.nonfinite);
    CHECK(memcmp(&g.sum_squares, &v.sum_squares, sizeof(double)) == 0);
}

int main(void) {
    mpiucc_stats s;
    float one = 1.0f;
    CHECK_ST(mpiucc_finite_stats(&one, 1, MPIUCC_DTYPE_F32, 1.0, NULL), MPIUCC_ERR_ARG);
    CHECK_ST(mpiucc_finite_stats(NULL, 1, MPIUCC_DTYPE_F32, 1.0, &s), MPIUCC_ERR_ARG);
    CHECK_ST(mpiucc_finite_stats(&one, 1, (mpiucc_dtype)9, 1.0, &s), MPIUCC_ERR_ARG);
    CHECK_ST(mpiucc_finite_stats(&one, 1, MPIUCC_DTYPE_F16, 1.0, &s), MPIUCC_ERR_UNSUPPORTED);
    CHECK_ST(mpiucc_finite_stats(&one, 1, MPIUCC_DTYPE_F32, -1.0, &s), MPIUCC_ERR_ARG);
    CHECK_ST(mpiucc_finite_stats(&one, 1, MPIUCC_DTYPE_F32, NAN, &s), MPIUCC_ERR_ARG);
    CHECK_ST(mpiucc_finite_stats(&one, 1, MPIUCC_DTYPE_F32, INFINITY, &s), MPIUCC_ERR_ARG);
    CHECK_ST(mpiucc_finite_stats(NULL, 0, MPIUCC_DTYPE_F64, 1.0, &s), MPIUCC_OK);
    CHECK(s.min == 0 && s.max == 0 && s.sum_squares == 0 && s.nonfinite == 0);
    float f[3] = {NAN, -2.0f, 3.0f};
    CHECK_ST(mpiucc_finite_stats(f, 3, MPIUCC_DTYPE_F32, 1.0, &s), MPIUCC_OK);
    CHECK(s.min == -2.0 && s.max == 3.0 && s.sum_squares == 13.0 && s.nonfinite == 1);
    CHECK_ST(mpiucc_finite_stats(f, 3, MPIUCC_DTYPE_F32, 0.0, &s), MPIUCC_OK);
    CHECK(s.min == -2.0 && s.max == 3.0 && s.sum_squares == 0.0 && s.nonfinite == 1);

    mpiucc_simd before = mpiucc_simd_level();
    for (int round = 0; round < 20; round++)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            size_t n = sizes[k];
            double *x = malloc((n + 1) * sizeof(double));
            float *y = malloc((n + 1) * sizeof(float));
            fill(x, n);
            for (size_t i = 0; i < n; i++) y[i] = (float)x[i];
            check_levels(MPIUCC_DTYPE_F64, x, n, 1.0);
            check_levels(MPIUCC_DTYPE_F64, x, n, 1e-300);
            check_levels(MPIUCC_DTYPE_F32, y, n, 1.0);
            check_levels(MPIUCC_DTYPE_F32, y, n, 3e-7);
            check_levels(MPIUCC_DTYPE_F32, y, n, 0.0);
            check_levels(MPIUCC_DTYPE_F64, x, n, 0.0);
            free(x);
            free(y);
        }
    mpiucc_set_simd_level(before);
    return tu_report("test_stats");
}
