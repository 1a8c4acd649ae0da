/* Fuzz target: round trips of the quantizing codecs (fp16, bf16, int8, int4, sign, qsgd, topk)
 * on adversarial data, against the per-element rules of codecs/FORMAT.md.
 * Input: byte 0 = codec (bits 0-2, mod 7), dtype (bits 3-4), stochastic (bit 5), payload
 * checksum (bit 6), error feedback (bit 7); byte 1 = block size / 8 (0: the default);
 * byte 2 = levels (qsgd s, topk k); bytes 3-10 = seed; then the elements. Aborts when an
 * element breaks its codec's rule, a size differs from the formula, or compressing twice or on
 * the generic and AVX2 paths gives different bytes (or residuals). */
#include <float.h>

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define F16_MAX 65504.0
#define BF16_MAX 0x1.fep127

static double f16_value(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}
static double load(uint32_t t, const void *p, size_t i) {
    switch (t) {
    case MPIUCC_DTYPE_F32: return ((const float *)p)[i];
    case MPIUCC_DTYPE_F64: return ((const double *)p)[i];
    case MPIUCC_DTYPE_F16: return f16_value(((const uint16_t *)p)[i]);
    default: {
        uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    }
}
/* Half an ulp of x in a format with p significant bits and smallest normal exponent emin. */
static double half_ulp(double x, int p, int emin) {
    int e;
    frexp(fabs(x), &e);
    if (x == 0 || !isfinite(x) || e - 1 < emin) e = emin + 1;
    return ldexp(1.0, e - 1 - (p - 1) - 1);
}
/* Rounding of a decoded f32 value into the output dtype. */
static double out_round(uint32_t t, double y) {
    return t == MPIUCC_DTYPE_F16 ? half_ulp(y, 11, -14) : t == MPIUCC_DTYPE_BF16 ? half_ulp(y, 8, -126) : 0;
}
/* The rank of |v| in topk's order (bits, NaN > Inf > finite). All NaNs rank the same here:
 * their payloads do not survive this file's widening through double. */
#define NAN_RANK 0x7fc00000u
static uint32_t abs_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return isnan(f) ? NAN_RANK : u & 0x7fffffffu;
}

typedef struct {
    mpiucc_params p;
    const void *x, *y;
    const uint8_t *payload;
    size_t n, b;
} job;

/* The value the block codecs quantize: f64 data is rounded once to f32. */
static float seen(const job *j, size_t i) { return (float)load(j->p.dtype, j->x, i); }

static void check_half(const job *j) {
    int bf = j->p.codec == MPIUCC_CODEC_BF16;
    double top = bf ? BF16_MAX : F16_MAX;
    for (size_t i = 0; i < j->n; i++) {
        double v = load(j->p.dtype, j->x, i), y = load(j->p.dtype, j->y, i);
        if (isnan(v)) {
            FZ_ASSERT(isnan(y));
        } else if (isinf(v)) {
            FZ_ASSERT(y == v);
        } else {
            FZ_ASSERT(isfinite(y)); /* finite values saturate, never become Inf */
            double want = fabs(v) > top ? copysign(top, v) : v;
            double tol = (fabs(v) > top ? 0 : bf ? half_ulp(v, 8, -126) : half_ulp(v, 11, -14)) +
                         out_round(j->p.dtype, y);
            FZ_ASSERT(fabs(y - want) <= tol);
        }
    }
}

/* int8, int4, sign, qsgd: one block at a time. */
static void check_block(const job *j, size_t i0, size_t len) {
    uint32_t c = j->p.codec, t = j->p.dtype;
    int finite = 1, stoch = j->p.rounding == MPIUCC_ROUND_STOCHASTIC;
    double amax = 0, sum_abs = 0, sumsq = 0;
    for (size_t i = i0; i < i0 + len; i++) {
        double v = seen(j, i);
        finite &= isfinite(v);
        if (!finite) break;
        amax = fabs(v) > amax ? fabs(v) : amax;
        sum_abs += fabs(v);
        sumsq += v * v;
    }
    if (!finite) { /* a non-finite block decodes to NaN */
        for (size_t i = i0; i < i0 + len; i++) FZ_ASSERT(isnan(load(t, j->y, i)));
        return;
    }
    double levels = c == MPIUCC_CODEC_INT8 ? 127 : c == MPIUCC_CODEC_INT4 ? 7 : j->p.levels;
    double scale = c == MPIUCC_CODEC_SIGN ? sum_abs / (double)len
                   : c == MPIUCC_CODEC_QSGD ? fmin(sqrt(sumsq), FLT_MAX)
                                            : amax;
    /* f32 roundings (as tests/c/test_quant.c): relative to the block's magnitude, plus an
     * absolute 2^-149 per level where scales and products fall below the normal range */
    double rel = c == MPIUCC_CODEC_INT8 || c == MPIUCC_CODEC_INT4 ? 0x1p-21 : 0x1p-20;
    double slack = scale * rel + (levels + 1) * 0x1p-149;
    for (size_t i = i0; i < i0 + len; i++) {
        double v = seen(j, i), y = load(t, j->y, i), err = fabs(v - y), r = out_round(t, y);
        FZ_ASSERT(!isnan(y));
        if (c == MPIUCC_CODEC_SIGN) {
            FZ_ASSERT(!!signbit(y) == !!signbit(v)); /* +0 -> +scale, -0 -> -scale */
            FZ_ASSERT(fabs(fabs(y) - scale) <= slack + r);
            FZ_ASSERT(fabs(y) == fabs(load(t, j->y, i0))); /* one magnitude per block */
        } else {
            double step = scale / levels;
            FZ_ASSERT(err <= (stoch ? step : step / 2) + slack + r);
            if (c == MPIUCC_CODEC_QSGD) FZ_ASSERT(!!signbit(y) == !!signbit(v) || y == 0);
        }
    }
}

/* topk: the payload names the kept positions; they hold the largest |v| (as bits, ties to
 * the lower position) with their f32 values, every other element decodes to 0. */
static const uint8_t *check_topk_block(const job *j, const uint8_t *pl, size_t i0, size_t len) {
    size_t m = j->p.levels < len ? j->p.levels : len;
    uint8_t kept[65536];
    memset(kept, 0, len);
    uint32_t min_kept = UINT32_MAX;
    size_t min_kept_pos = 0;
    for (size_t e = 0; e < m; e++) {
        size_t pos = (size_t)(pl[2 * e] | pl[2 * e + 1] << 8);
        FZ_ASSERT(pos < len && (e == 0 || pos > (size_t)(pl[2 * e - 2] | pl[2 * e - 1] << 8)));
        kept[pos] = 1;
        float v = seen(j, i0 + pos), stored;
        uint32_t u = fz_u32(pl + 2 * m + 4 * e);
        memcpy(&stored, &u, 4);
        FZ_ASSERT(isnan(v) ? isnan(stored) : !memcmp(&v, &stored, 4));
        double y = load(j->p.dtype, j->y, i0 + pos);
        FZ_ASSERT(isnan(v) ? isnan(y) : fabs(y - stored) <= out_round(j->p.dtype, y) || y == stored);
        if (abs_bits(v) <= min_kept) {
            min_kept = abs_bits(v);
            min_kept_pos = pos;
        }
    }
    for (size_t i = 0; i < len; i++) {
        if (kept[i]) continue;
        FZ_ASSERT(load(j->p.dtype, j->y, i0 + i) == 0);
        uint32_t a = abs_bits(seen(j, i0 + i));
        FZ_ASSERT(a < min_kept || (a == min_kept && (i > min_kept_pos || a == NAN_RANK)));
    }
    return pl + 6 * m;
}

static uint64_t payload_size(const job *j) {
    uint64_t n = j->n, b = j->b, nb = b ? n / b + (n % b != 0) : 0, s = j->p.levels, w = 2;
    while ((1u << w) < 2 * s + 1) w++;
    switch (j->p.codec) {
    case MPIUCC_CODEC_FP16:
    case MPIUCC_CODEC_BF16: return 2 * n;
    case MPIUCC_CODEC_INT8: return 4 * nb + n;
    case MPIUCC_CODEC_INT4: return 4 * nb + (n + 1) / 2;
    case MPIUCC_CODEC_SIGN: return 4 * nb + (n + 7) / 8;
    case MPIUCC_CODEC_QSGD: return 4 * nb + (n * w + 7) / 8;
    default: return 6 * ((n / b) * (s < b ? s : b) + (s < n % b ? s : n % b));
    }
}

static size_t compress_at(mpiucc_simd level, const mpiucc_params *p, const void *x, void *res,
                          size_t n, uint8_t *out, size_t cap) {
    size_t size = 0;
    mpiucc_set_simd_level(level);
    mpiucc_status st = res ? mpiucc_compress_ef(p, x, res, n, out, cap, &size)
                           : mpiucc_compress(p, x, n, out, cap, &size);
    FZ_ASSERT(st == MPIUCC_OK && size <= cap);
    return size;
}

/* Error feedback on both paths: the same frame and the same residuals. */
static void check_ef_paths(const mpiucc_params *p, const void *x, size_t n, size_t es, size_t cap) {
    uint8_t *rg = (uint8_t *)malloc(n * es + 1), *ra = (uint8_t *)malloc(n * es + 1),
            *fg = (uint8_t *)malloc(cap), *fa = (uint8_t *)malloc(cap);
    FZ_ASSERT(rg && ra && fg && fa);
    for (size_t i = 0; i < n * es; i++) rg[i] = ra[i] = ((const uint8_t *)x)[n * es - 1 - i];
    size_t sg = compress_at(MPIUCC_SIMD_GENERIC, p, x, rg, n, fg, cap);
    size_t sa = compress_at(MPIUCC_SIMD_AVX2, p, x, ra, n, fa, cap);
    FZ_ASSERT(sg == sa && !memcmp(fg, fa, sa) && !memcmp(rg, ra, n * es));
    free(rg), free(ra), free(fg), free(fa);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 11) return 0;
    unsigned opt = data[0];
    job j;
    mpiucc_params p = MPIUCC_PARAMS_INIT;
    p.codec = MPIUCC_CODEC_FP16 + (opt & 7) % 7;
    p.dtype = MPIUCC_DTYPE_F32 + ((opt >> 3) & 3);
    int half = p.codec == MPIUCC_CODEC_FP16 || p.codec == MPIUCC_CODEC_BF16;
    p.block_size = half ? 0 : 8u * data[1];
    uint32_t b = half ? 0 : p.block_size ? p.block_size : 256;
    if (p.codec == MPIUCC_CODEC_QSGD) p.levels = 1 + data[2] % 127;
    if (p.codec == MPIUCC_CODEC_TOPK) p.levels = 1 + data[2] % b;
    if (p.codec == MPIUCC_CODEC_INT8 || p.codec == MPIUCC_CODEC_INT4 || p.codec == MPIUCC_CODEC_QSGD)
        p.rounding = (opt >> 5) & 1;
    p.flags = (opt >> 6) & 1;
    memcpy(&p.seed, data + 3, 8);
    size_t es = mpiucc_dtype_size((mpiucc_dtype)p.dtype), n = (size - 11) / es;
    void *x = malloc(n * es + 1), *yg = malloc(n * es + 1), *ya = malloc(n * es + 1);
    size_t cap = mpiucc_compress_bound(&p, n);
    FZ_ASSERT(x && yg && ya && cap >= MPIUCC_HEADER_SIZE);
    memcpy(x, data + 11, n * es);
    uint8_t *fg = (uint8_t *)malloc(cap), *fa = (uint8_t *)malloc(cap), *f2 = (uint8_t *)malloc(cap);
    FZ_ASSERT(fg && fa && f2);
    size_t sg = compress_at(MPIUCC_SIMD_GENERIC, &p, x, NULL, n, fg, cap);
    size_t sa = compress_at(MPIUCC_SIMD_AVX2, &p, x, NULL, n, fa, cap);
    size_t s2 = compress_at(MPIUCC_SIMD_AVX2, &p, x, NULL, n, f2, sa);
    FZ_ASSERT(sg == sa && !memcmp(fg, fa, sa)); /* generic == AVX2 */
    FZ_ASSERT(s2 == sa && !memcmp(f2, fa, sa)); /* deterministic */
    j.p = p, j.x = x, j.y = ya, j.n = n, j.b = b, j.payload = fa + MPIUCC_HEADER_SIZE;
    FZ_ASSERT(sa == MPIUCC_HEADER_SIZE + payload_size(&j));
    mpiucc_header h;
    FZ_ASSERT(mpiucc_read_header(fa, sa, &h) == MPIUCC_OK);
    FZ_ASSERT(h.bound == INFINITY && h.param == 0 && h.block == b && h.count == n);
    mpiucc_set_simd_level(MPIUCC_SIMD_GENERIC);
    FZ_ASSERT(mpiucc_decompress(fa, sa, yg, n * es, NULL) == MPIUCC_OK);
    mpiucc_set_simd_level(MPIUCC_SIMD_AVX2);
    FZ_ASSERT(mpiucc_decompress(fa, sa, ya, n * es, NULL) == MPIUCC_OK);
    FZ_ASSERT(!memcmp(yg, ya, n * es));
    if (half) {
        check_half(&j);
    } else {
        const uint8_t *pl = j.payload;
        for (size_t i0 = 0; i0 < n; i0 += b) {
            size_t len = n - i0 < b ? n - i0 : b;
            if (p.codec == MPIUCC_CODEC_TOPK) pl = check_topk_block(&j, pl, i0, len);
            else check_block(&j, i0, len);
        }
    }
    if (opt & 0x80) check_ef_paths(&p, x, n, es, cap);
    free(x), free(yg), free(ya), free(fg), free(fa), free(f2);
    return 0;
}
