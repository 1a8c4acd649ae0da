/* Run-time choice of the SIMD kernels: write-once, overridable for tests. */
#include <stdlib.h>

#include "internal.h"

#if MPIUCC_X86 && defined(__GNUC__)
#include <cpuid.h>

/* F16C through CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know it. */
static int has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}
#endif

static int simd_cached = -1;

static mpiucc_simd cpu_best(void) {
#if MPIUCC_X86 && defined(__GNUC__)
    /* The x86/ objects are compiled with -mavx2 -mf16c -mbmi2: all three must be there (the
     * checks include the OS's support of the AVX state). */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") && has_f16c())
        return MPIUCC_SIMD_AVX2;
#endif
    return MPIUCC_SIMD_GENERIC;
}

static int forced_generic(void) {
    const char *v = getenv("MPIUCC_FORCE_GENERIC");
    return v && v[0] && !(v[0] == '0' && v[1] == 0);
}

mpiucc_simd mpiucc_simd_now(void) {
    int s = __atomic_load_n(&simd_cached, __ATOMIC_ACQUIRE);
    if (s < 0) {
        s = forced_generic() ? MPIUCC_SIMD_GENERIC : cpu_best();
        __atomic_store_n(&simd_cached, s, __ATOMIC_RELEASE);
    }
    return (mpiucc_simd)s;
}

mpiucc_simd mpiucc_simd_level(void) { return mpiucc_simd_now(); }

mpiucc_simd mpiucc_set_simd_level(mpiucc_simd level) {
    mpiucc_simd best = cpu_best();
    int s = level < best ? level : best;
    __atomic_store_n(&simd_cached, s, __ATOMIC_RELEASE);
    return (mpiucc_simd)s;
}

const char *mpiucc_simd_name(mpiucc_simd level) {
    switch (level) {
    case MPIUCC_SIMD_GENERIC: return "generic";
    case MPIUCC_SIMD_AVX2: return "avx2";
    }
    return "unknown";
}
