/* test_util.h: a tiny check-and-report helper for the C tests (header only).
 *
 *   CHECK(cond)                 count a check; print the first failures with file:line
 *   CHECK_ST(status, expected)  the same for mpiucc_status, printing both status strings
 *   tu_rand_*()                 a seeded, deterministic random source (splitmix64)
 *   return tu_report("name");   from main: prints a summary, exit status 1 on any failure
 */
#ifndef MPIUCC_TEST_UTIL_H
#define MPIUCC_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpiucc.h"

static long tu_checks, tu_failures;

#define TU_MAX_PRINTED 25

#define CHECK(cond)                                                                  \
    do {                                                                             \
        tu_checks++;                                                                 \
        if (!(cond)) {                                                               \
            if (++tu_failures <= TU_MAX_PRINTED)                                     \
                fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_ST(st, want)                                                              \
    do {                                                                                \
        mpiucc_status tu_s_ = (st), tu_w_ = (want);                                     \
        tu_checks++;                                                                    \
        if (tu_s_ != tu_w_) {                                                           \
            if (++tu_failures <= TU_MAX_PRINTED)                                        \
                fprintf(stderr, "%s:%d: %s gave \"%s\", expected \"%s\"\n", __FILE__,     \
                        __LINE__, #st, mpiucc_status_string(tu_s_),                     \
                        mpiucc_status_string(tu_w_));                                   \
        }                                                                               \
    } while (0)

static inline int tu_report(const char *name) {
    printf("%s: %ld checks, %ld failures\n", name, tu_checks, tu_failures);
    return tu_failures != 0;
}

static uint64_t tu_rng = 0x9e3779b97f4a7c15ull;
static inline void tu_seed(uint64_t s) { tu_rng = s * 0x9e3779b97f4a7c15ull + 1; }
static inline uint64_t tu_rand_u64(void) {
    uint64_t z = (tu_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* Uniform in (0, 1). */
static inline double tu_rand_unit(void) { return ((double)(tu_rand_u64() >> 11) + 0.5) * 0x1p-53; }
static inline double tu_rand_laplace(double scale) {
    double u = tu_rand_unit() - 0.5;
    return u < 0 ? scale * log(1 + 2 * u) : -scale * log(1 - 2 * u);
}
static inline double tu_rand_normal(void) {
    return sqrt(-2 * log(tu_rand_unit())) * cos(6.283185307179586 * tu_rand_unit());
}
/* Student-t with nu degrees of freedom (heavy tails for small nu). */
static inline double tu_rand_student(int nu) {
    double c = 0;
    for (int i = 0; i < nu; i++) {
        double g = tu_rand_normal();
        c += g * g;
    }
    return tu_rand_normal() / sqrt(c / nu);
}

#endif /* MPIUCC_TEST_UTIL_H */
