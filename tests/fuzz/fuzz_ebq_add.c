/* Fuzz target: mpiucc_ebq_add (the integer-domain sum of two ebq frames) on two fuzzed frames.
 * Input: byte 0 = options, bytes 1-2 = size of frame a, then a, then b. Both get codec ebq and
 * fixed checksums; option bit 0 copies a's dtype, count and step into b so that most pairs
 * match. A sum must be a valid frame whose decoding is the sum of the decoded inputs (up to the
 * roundings of the three decodings), with the sum of their bounds. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *frame_copy(const uint8_t *data, size_t size) {
    uint8_t *f = (uint8_t *)calloc(1, size ? size : 1);
    FZ_ASSERT(f);
    if (size) memcpy(f, data, size);
    if (size >= MPIUCC_HEADER_SIZE) f[5] = MPIUCC_CODEC_EBQ;
    return f;
}

static void *decoded(const uint8_t *f, size_t size, size_t n, size_t es) {
    void *y = malloc(n ? n * es : 1);
    FZ_ASSERT(y);
    FZ_ASSERT(mpiucc_decompress(f, size, y, n * es, NULL) == MPIUCC_OK);
    return y;
}

/* The decoded sum against ya + yb, where everything is finite. */
static void check_sum(const void *ya, const void *yb, const void *ys, size_t n, int f64) {
    for (size_t i = 0; i < n; i++) {
        double a = f64 ? ((const double *)ya)[i] : ((const float *)ya)[i];
        double b = f64 ? ((const double *)yb)[i] : ((const float *)yb)[i];
        double s = f64 ? ((const double *)ys)[i] : ((const float *)ys)[i];
        double w = f64 ? a + b : (double)((float)a + (float)b);
        if (!isfinite(a) || !isfinite(b) || !isfinite(s) || !isfinite(w)) continue;
        double tol = (fabs(a) + fabs(b) + fabs(s)) * (f64 ? 0x1p-50 : 0x1p-22) +
                     (f64 ? 0x1p-1070 : 0x1p-146);
        FZ_ASSERT(fabs(s - w) <= tol);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    unsigned opt = data[0];
    size_t na = (size_t)(data[1] | data[2] << 8);
    data += 3;
    size -= 3;
    if (na > size) na = size;
    size_t nb = size - na;
    uint8_t *a = frame_copy(data, na), *b = frame_copy(data + na, nb);
    if ((opt & 1) && na >= MPIUCC_HEADER_SIZE && nb >= MPIUCC_HEADER_SIZE) {
        b[6] = a[6];
        memcpy(b + 8, a + 8, 8);
        memcpy(b + 24, a + 24, 8);
    }
    fz_fix_checksums(a, na);
    fz_fix_checksums(b, nb);
    mpiucc_header ha, hb, hs;
    size_t bound = mpiucc_ebq_add_bound(a, na, b, nb), ss = 0;
    int ok_a = mpiucc_read_header(a, na, &ha) == MPIUCC_OK;
    int ok_b = mpiucc_read_header(b, nb, &hb) == MPIUCC_OK;
    if (!ok_a || !ok_b) FZ_ASSERT(bound == 0);
    uint8_t small[MPIUCC_HEADER_SIZE];
    if (ok_a && ha.count > FZ_MAX_COUNT) { /* refused for want of room, before any scratch */
        FZ_ASSERT(mpiucc_ebq_add(a, na, b, nb, small, sizeof small, &ss) != MPIUCC_OK);
        goto out;
    }
    if (bound == 0) {
        mpiucc_status st = mpiucc_ebq_add(a, na, b, nb, small, sizeof small, &ss);
        FZ_ASSERT(st != MPIUCC_OK || (ok_a && ha.count == 0));
        goto out;
    }
    uint8_t *s = (uint8_t *)malloc(bound), *s2 = (uint8_t *)malloc(bound);
    FZ_ASSERT(s && s2);
    mpiucc_status st = mpiucc_ebq_add(a, na, b, nb, s, bound, &ss);
    FZ_ASSERT(st <= MPIUCC_ERR_NOMEM);
    if (st == MPIUCC_OK) {
        size_t ss2 = 0, n = ha.count, es = mpiucc_dtype_size((mpiucc_dtype)ha.dtype);
        FZ_ASSERT(ss <= bound);
        FZ_ASSERT(mpiucc_ebq_add(a, na, b, nb, s2, bound, &ss2) == MPIUCC_OK);
        FZ_ASSERT(ss2 == ss && !memcmp(s, s2, ss)); /* deterministic */
        FZ_ASSERT(mpiucc_read_header(s, ss, &hs) == MPIUCC_OK);
        FZ_ASSERT(hs.codec == MPIUCC_CODEC_EBQ && hs.count == n && hs.dtype == ha.dtype);
        FZ_ASSERT(!memcmp(&hs.param, &ha.param, 8) && (hs.aux & 0xff) == (ha.aux & 0xff));
        double want = ha.bound + hb.bound;
        FZ_ASSERT(!memcmp(&hs.bound, &want, 8));
        void *ya = decoded(a, na, n, es), *yb = decoded(b, nb, n, es), *ys = decoded(s, ss, n, es);
        check_sum(ya, yb, ys, n, es == 8);
        free(ya);
        free(yb);
        free(ys);
    }
    free(s);
    free(s2);
out:
    free(a);
    free(b);
    return 0;
}
