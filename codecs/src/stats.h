/* stats.h: the kernels behind mpiucc_finite_stats (generic in stats.c, AVX2 in x86/). */
#ifndef MPIUCC_STATS_H
#define MPIUCC_STATS_H

#include "internal.h"

#define STATS_LANES 16 /* element i's square goes to lane i mod 16 */

/* Running statistics: lo/hi start at +inf/-inf, the lanes and bad at 0. */
typedef struct {
    double lo, hi;
    double lanes[STATS_LANES];
    uint64_t bad;
} stats_acc;

/* Add elements [i0, n) of src to acc, element i's square (scale 0: none) into lane i mod 16
 * (i0 is a multiple of 16 or the tail after a SIMD body). */
void stats_tail_f32(const float *x, size_t i0, size_t n, double scale, stats_acc *acc);
void stats_tail_f64(const double *x, size_t i0, size_t n, double scale, stats_acc *acc);

#if MPIUCC_X86
void stats_avx2_f32(const float *x, size_t n, double scale, stats_acc *acc);
void stats_avx2_f64(const double *x, size_t n, double scale, stats_acc *acc);
#endif

#endif
