/* ebq_kernels.c: the generic (portable C) ebq kernels and the run-time kernel choice. */
#include <float.h>

#include "ebq.h"

static void quantize_generic(const ebq_grid *g, const void *src, void *residual, size_t i0,
                             size_t m, int32_t *prev, uint32_t *z, uint32_t *ors, int32_t *q,
                             ebq_sink *sink) {
    int32_t p = *prev;
    size_t padded = (m + EBQ_BLOCK - 1) / EBQ_BLOCK * EBQ_BLOCK;
    for (size_t i = 0; i < m; i++) {
        int32_t qi;
        if (g->dtype == MPIUCC_DTYPE_F32) {
            float *r = residual ? (float *)residual + i0 + i : NULL, rn;
            float v = ((const float *)src)[i0 + i];
            qi = ebq_quant1_f32(g, r ? v + *r : v, i0 + i, sink, &rn);
            if (r) *r = rn;
        } else {
            double *r = residual ? (double *)residual + i0 + i : NULL, rn;
            double v = ((const double *)src)[i0 + i];
            qi = ebq_quant1_f64(g, r ? v + *r : v, i0 + i, sink, &rn);
            if (r) *r = rn;
        }
        if (q) q[i] = qi;
        z[i] = ebq_zigzag(g->delta ? (int32_t)((uint32_t)qi - (uint32_t)p) : qi);
        p = qi;
    }
    for (size_t i = m; i < padded; i++) z[i] = 0;
    for (size_t b = 0; b < padded / EBQ_BLOCK; b++) {
        uint32_t o = 0;
        for (size_t i = 0; i < EBQ_BLOCK; i++) o |= z[b * EBQ_BLOCK + i];
        ors[b] = o;
    }
    *prev = p;
}

void ebq_dequant_generic(const ebq_grid *g, const uint32_t *z, size_t m, int32_t *prev,
                         void *dst, int add) {
    int32_t p = *prev;
    for (size_t i = 0; i < m; i++) {
        int32_t qi = ebq_unzigzag(z[i]);
        if (g->delta) qi = (int32_t)((uint32_t)p + (uint32_t)qi);
        p = qi;
        double y = (double)qi * g->step;
        if (g->dtype == MPIUCC_DTYPE_F32) {
            float *d = (float *)dst + i;
            *d = add ? *d + (float)y : (float)y;
        } else {
            double *d = (double *)dst + i;
            *d = add ? *d + y : y;
        }
    }
    *prev = p;
}

static void decode_generic(const ebq_grid *g, const uint8_t *widths, const uint8_t *packed,
                           const uint8_t *end, size_t n, void *dst, int add) {
    (void)end;
    int32_t prev = 0;
    uint32_t z[EBQ_BLOCK];
    for (size_t b = 0, i0 = 0; i0 < n; b++, i0 += EBQ_BLOCK) {
        size_t m = n - i0 < EBQ_BLOCK ? n - i0 : EBQ_BLOCK;
        ebq_unpack32(packed, widths[b], z);
        packed += 4u * widths[b];
        ebq_dequant_generic(g, z, m, &prev, (uint8_t *)dst + i0 * g->es, add);
    }
}

static int minmax_generic(mpiucc_dtype t, const void *src, const void *residual, size_t n,
                          double *mn, double *mx) {
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double v;
        if (t == MPIUCC_DTYPE_F32) {
            float f = ((const float *)src)[i];
            if (residual) f += ((const float *)residual)[i];
            v = f;
        } else {
            v = ((const double *)src)[i];
            if (residual) v += ((const double *)residual)[i];
        }
        if (!(fabs(v) <= DBL_MAX)) continue;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
    }
    *mn = lo <= hi ? lo : 0.0;
    *mx = lo <= hi ? hi : 0.0;
    return lo <= hi;
}

static void block_indices_generic(const uint8_t *packed, unsigned w, const uint8_t *end,
                                  int delta, int32_t *prev, int32_t *q) {
    (void)end;
    uint32_t z[EBQ_BLOCK];
    ebq_unpack32(packed, w, z);
    ebq_z_to_indices(z, delta, prev, q);
}

static uint32_t sum_block_generic(const int32_t *qa, const int32_t *qb, int delta,
                                  int32_t *prev, uint32_t *z, int *overflow) {
    int32_t p = *prev;
    uint32_t o = 0;
    int ov = 0;
    for (int i = 0; i < EBQ_BLOCK; i++) {
        int64_t s = (int64_t)qa[i] + qb[i];
        ov |= s > INT32_MAX || s < INT32_MIN;
        int32_t v = (int32_t)(uint32_t)s; /* wraps; only used when there is no overflow */
        o |= z[i] = ebq_zigzag(delta ? (int32_t)((uint32_t)v - (uint32_t)p) : v);
        p = v;
    }
    *prev = p;
    *overflow = ov;
    return o;
}

void ebq_z_to_indices(const uint32_t *z, int delta, int32_t *prev, int32_t *q) {
    int32_t p = *prev;
    for (int i = 0; i < EBQ_BLOCK; i++) {
        int32_t v = ebq_unzigzag(z[i]);
        q[i] = p = delta ? (int32_t)((uint32_t)p + (uint32_t)v) : v;
    }
    *prev = p;
}

const ebq_kernels ebq_kernels_generic = {quantize_generic, decode_generic, minmax_generic,
                                         block_indices_generic, sum_block_generic,
                                         ebq_dequant_generic};

const ebq_kernels *ebq_kernels_now(void) {
#if MPIUCC_X86
    if (mpiucc_simd_now() == MPIUCC_SIMD_AVX2) return &ebq_kernels_avx2;
#endif
    return &ebq_kernels_generic;
}
