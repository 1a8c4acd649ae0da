/* Quantizing codecs (fp16, bf16, int8, int4, sign, qsgd, topk): round trips, error bounds,
 * exact sizes, policies for range and non-finite values, parameter and header validation. */
#include "q_testlib.h"

/* Half an ulp of x in a format with p significant bits and smallest normal exponent emin. */
static double half_ulp(double x, int p, int emin) {
    int e;
    frexp(fabs(x), &e); /* |x| = m 2^e, m in [0.5, 1): the binade is 2^(e-1) */
    if (x == 0 || e - 1 < emin) e = emin + 1;
    return ldexp(1.0, e - 1 - (p - 1) - 1);
}
static double half_ulp_of(uint32_t t, double x) {
    switch (t) {
    case MPIUCC_DTYPE_F32: return half_ulp(x, 24, -126);
    case MPIUCC_DTYPE_F64: return half_ulp(x, 53, -1022);
    case MPIUCC_DTYPE_F16: return half_ulp(x, 11, -14);
    default: return half_ulp(x, 8, -126);
    }
}
/* The input value as the codecs see it (f64 data is rounded to f32 by the block codecs). */
static double seen(uint32_t codec, uint32_t t, const void *x, size_t i) {
    double v = q_get(t, x, i);
    if (t == MPIUCC_DTYPE_F64 && codec >= MPIUCC_CODEC_INT8) v = (float)v;
    return v;
}

static void check_decoded(const mpiucc_params *p, const void *x, const void *y, size_t n,
                          const uint8_t *frame) {
    uint32_t t = p->dtype, c = p->codec;
    size_t b = q_block(p);
    const uint8_t *payload = frame + MPIUCC_HEADER_SIZE;
    size_t topk_off = 0;
    for (size_t j0 = 0; j0 < n; j0 += b ? b : n) {
        size_t len = b ? (n - j0 < b ? n - j0 : b) : n, blk = b ? j0 / b : 0;
        double amax = 0, sum_abs = 0;
        for (size_t i = j0; i < j0 + len; i++) {
            double v = fabs(seen(c, t, x, i));
            if (v > amax) amax = v;
            sum_abs += v;
        }
        float scale = b && c != MPIUCC_CODEC_TOPK ? q_frame_scale(p, frame, blk) : 0;
        /* topk: the kept positions of this block */
        unsigned char kept[65536];
        size_t m = 0;
        if (c == MPIUCC_CODEC_TOPK) {
            memset(kept, 0, len);
            m = p->levels < len ? p->levels : len;
            for (size_t e = 0; e < m; e++) kept[payload[topk_off + 2 * e] | payload[topk_off + 2 * e + 1] << 8] = 1;
            double min_kept = INFINITY, max_dropped = 0;
            for (size_t i = 0; i < len; i++) {
                double v = fabs(seen(c, t, x, j0 + i));
                if (kept[i] && v < min_kept) min_kept = v;
                if (!kept[i] && v > max_dropped) max_dropped = v;
            }
            CHECKF(min_kept >= max_dropped, "topk keeps the largest: %g < %g", min_kept, max_dropped);
            topk_off += 6 * m;
        }
        for (size_t i = j0; i < j0 + len; i++) {
            double v = seen(c, t, x, i), yi = q_get(t, y, i), err = fabs(v - yi);
            double out_round = t == MPIUCC_DTYPE_F16 || t == MPIUCC_DTYPE_BF16 ? half_ulp_of(t, yi) : 0;
            switch (c) {
            case MPIUCC_CODEC_FP16:
                if (fabs(v) > 65504)
                    CHECK(yi == copysign(65504, v));
                else
                    CHECKF(err <= half_ulp(v, 11, -14) + out_round, "fp16 %zu: %.9g -> %.9g", i, v, yi);
                break;
            case MPIUCC_CODEC_BF16:
                CHECKF(err <= half_ulp(v, 8, -126) + out_round, "bf16 %zu: %.9g -> %.9g", i, v, yi);
                break;
            case MPIUCC_CODEC_INT8:
            case MPIUCC_CODEC_INT4: {
                /* half a step, plus the f32 roundings of v * inv and q * scale (2^-23 amax each) */
                double tol = scale / 2.0 + amax * 0x1p-21 + out_round;
                CHECKF(err <= tol, "%s %zu: %.9g -> %.9g (scale %g)", q_codec_name(c), i, v, yi, scale);
                break;
            }
            case MPIUCC_CODEC_SIGN: {
                double mean = sum_abs / (double)len;
                CHECKF(fabs(scale - mean) <= mean * 1e-6, "sign scale %g vs mean %g", scale, mean);
                CHECK(fabs(yi) == fabs(q_get(t, y, j0))); /* one magnitude per block */
                CHECK(!!signbit(yi) == !!signbit(v) || yi == 0);
                break;
            }
            case MPIUCC_CODEC_QSGD: {
                double step = scale / p->levels;
                CHECKF(err <= step / 2.0 + scale * 0x1p-20 + out_round, "qsgd %zu: %.9g -> %.9g", i, v, yi);
                CHECK(!!signbit(yi) == !!signbit(v) || yi == 0);
                break;
            }
            case MPIUCC_CODEC_TOPK:
                if (kept[i - j0])
                    CHECKF(err <= out_round, "topk kept %zu: %.9g -> %.9g", i, v, yi);
                else
                    CHECK(yi == 0);
                break;
            }
        }
    }
}

static void test_roundtrip(uint32_t codec, uint32_t dtype, size_t n, uint32_t block) {
    mpiucc_params p = q_params(codec, dtype);
    if (q_block(&p)) p.block_size = block;
    if (codec == MPIUCC_CODEC_TOPK && block && block < 32) p.levels = 3;
    float *xf = malloc((n + 1) * sizeof(float));
    q_fill(xf, n);
    void *x = q_to_dtype(dtype, xf, n);
    size_t es = mpiucc_dtype_size((mpiucc_dtype)dtype), size = 0, count = 7;
    mpiucc_status st;
    uint8_t *frame = q_compress(&p, x, NULL, n, &size, &st);
    CHECKF(st == MPIUCC_OK, "%s dtype %u n %zu: %s", q_codec_name(codec), dtype, n, mpiucc_status_string(st));
    if (!frame) goto out_x;
    CHECKF(size == MPIUCC_HEADER_SIZE + q_payload_formula(&p, n), "%s n %zu size %zu", q_codec_name(codec), n, size);
    CHECK(size <= mpiucc_compress_bound(&p, n));
    mpiucc_header h;
    CHECK(mpiucc_read_header(frame, size, &h) == MPIUCC_OK);
    CHECK(h.codec == codec && h.dtype == dtype && h.count == n && h.bound == INFINITY);
    CHECK(h.block == q_block(&p) && h.param == 0.0);
    void *y = malloc(n * es + 1), *z = malloc(n * es + 1);
    CHECK(mpiucc_decompress(frame, size, y, n * es, &count) == MPIUCC_OK && count == n);
    check_decoded(&p, x, y, n, frame);
    /* decompress_add: z + decoded, in the dtype's arithmetic */
    for (size_t i = 0; i < n; i++) mpiucc_store((mpiucc_dtype)dtype, z, i, q_normal());
    void *z0 = malloc(n * es + 1);
    memcpy(z0, z, n * es);
    CHECK(mpiucc_decompress_add(frame, size, z, n * es, NULL) == MPIUCC_OK);
    for (size_t i = 0; i < n; i++) {
        double a = q_get(dtype, z0, i), d = q_get(dtype, y, i), got = q_get(dtype, z, i);
        if (dtype == MPIUCC_DTYPE_F32)
            CHECK(got == (double)((float)a + (float)d));
        else if (dtype == MPIUCC_DTYPE_F64)
            CHECK(got == a + d);
        else
            CHECKF(fabs(got - (a + d)) <= 2 * half_ulp_of(dtype, a + d) + half_ulp_of(dtype, d),
                   "add %zu: %g + %g = %g", i, a, d, got);
    }
    /* nothing past the frame is written */
    {
        size_t cap = mpiucc_compress_bound(&p, n) + 64, sz2 = 0;
        uint8_t *big = malloc(cap);
        memset(big, 0xa5, cap);
        CHECK(mpiucc_compress(&p, x, n, big, cap, &sz2) == MPIUCC_OK && sz2 == size);
        int clean = 1;
        for (size_t i = sz2; i < cap; i++) clean &= big[i] == 0xa5;
        CHECKF(clean, "%s n %zu: bytes past the frame written", q_codec_name(codec), n);
        CHECK(!memcmp(big, frame, size));
        free(big);
    }
    /* a too small destination is refused */
    if (n) CHECK(mpiucc_decompress(frame, size, y, n * es - 1, NULL) == MPIUCC_ERR_CAPACITY);
    /* a too small frame buffer is refused (and leaves the residual alone) */
    if (size > MPIUCC_HEADER_SIZE) {
        uint8_t *small = malloc(size);
        void *r = calloc(n + 1, es);
        size_t sz;
        CHECK(mpiucc_compress(&p, x, n, small, size - 1, &sz) == MPIUCC_ERR_CAPACITY);
        mpiucc_store((mpiucc_dtype)dtype, r, 0, 0.25);
        CHECK(mpiucc_compress_ef(&p, x, r, n, small, size - 1, &sz) == MPIUCC_ERR_CAPACITY);
        CHECK(q_get(dtype, r, 0) == 0.25);
        free(small);
        free(r);
    }
    free(z0);
    free(z);
    free(y);
    free(frame);
out_x:
    free(x);
    free(xf);
}

/* ---- policies ---- */

static uint16_t f16_bits(float f) {
    mpiucc_params p = q_params(MPIUCC_CODEC_FP16, MPIUCC_DTYPE_F32);
    uint8_t buf[MPIUCC_HEADER_SIZE + 2];
    size_t size;
    CHECK(mpiucc_compress(&p, &f, 1, buf, sizeof buf, &size) == MPIUCC_OK);
    return (uint16_t)(buf[64] | buf[65] << 8);
}

static void test_half_policies(void) {
    /* fp16 saturates finite values, keeps Inf and NaN, and records the saturation in aux */
    CHECK(f16_bits(1e6f) == 0x7bff && f16_bits(-1e6f) == 0xfbff);
    CHECK(f16_bits(65519.0f) == 0x7bff && f16_bits(65520.0f) == 0x7bff);
    CHECK(f16_bits(FLT_MAX) == 0x7bff);
    CHECK(f16_bits(INFINITY) == 0x7c00 && f16_bits(-INFINITY) == 0xfc00);
    CHECK((f16_bits(NAN) & 0x7e00) == 0x7e00);
    CHECK(f16_bits(-0.0f) == 0x8000 && f16_bits(0x1p-25f) == 0 && f16_bits(0x1.8p-25f) == 1);
    CHECK(f16_bits(1.0f + 0x1p-11f) == 0x3c00);           /* tie to even */
    CHECK(f16_bits(1.0f + 0x1p-11f + 0x1p-23f) == 0x3c01); /* above the tie */
    float xs[4] = {1.0f, 70000.0f, -2.0f, INFINITY};
    mpiucc_params p = q_params(MPIUCC_CODEC_FP16, MPIUCC_DTYPE_F32);
    uint8_t buf[256];
    size_t size;
    mpiucc_header h;
    CHECK(mpiucc_compress(&p, xs, 4, buf, sizeof buf, &size) == MPIUCC_OK);
    CHECK(mpiucc_read_header(buf, size, &h) == MPIUCC_OK && h.aux == 1);
    CHECK(mpiucc_compress(&p, xs, 1, buf, sizeof buf, &size) == MPIUCC_OK);
    CHECK(mpiucc_read_header(buf, size, &h) == MPIUCC_OK && h.aux == 0);
    xs[0] = INFINITY; /* Inf alone is not a saturation */
    CHECK(mpiucc_compress(&p, xs, 1, buf, sizeof buf, &size) == MPIUCC_OK);
    CHECK(mpiucc_read_header(buf, size, &h) == MPIUCC_OK && h.aux == 0);

    /* f64 input is rounded once: 1 + 2^-11 + 2^-40 is above the tie (via f32 it would be a tie) */
    double d[3] = {1.0 + 0x1p-11 + 0x1p-40, 1e300, 1.0 + 0x1p-8 + 0x1p-40};
    p.dtype = MPIUCC_DTYPE_F64;
    double back[3];
    CHECK(mpiucc_compress(&p, d, 2, buf, sizeof buf, &size) == MPIUCC_OK);
    CHECK(mpiucc_decompress(buf, size, back, sizeof back, NULL) == MPIUCC_OK);
    CHECK(back[0] == 1.0 + 0x1p-10 && back[1] == 65504.0);
    p.codec = MPIUCC_CODEC_BF16;
    CHECK(mpiucc_compress(&p, d + 1, 2, buf, sizeof buf, &size) == MPIUCC_OK);
    CHECK(mpiucc_decompress(buf, size, back, sizeof back, NULL) == MPIUCC_OK);
    CHECK(back[0] == (double)3.38953139e38f && back[1] == 1.0 + 0x1p-7);
    CHECK(mpiucc_read_header(buf, size, &h) == MPIUCC_OK && h.aux == 1);

    /* bf16: f32 values that would round to Inf saturate; NaN stays NaN */
    float bx[4] = {FLT_MAX, -FLT_MAX, NAN, 1.0f + 0x1p-8f}, by[4];
    p.dtype = MPIUCC_DTYPE_F32;
    CHECK(mpiucc_compress(&p, bx, 4, buf, sizeof buf, &size) == MPIUCC_OK);
    CHECK(mpiucc_decompress(buf, size, by, sizeof by, NULL) == MPIUCC_OK);
    CHECK(by[0] == 3.38953139e38f && by[1] == -3.38953139e38f && isnan(by[2]) && by[3] == 1.0f);
}

/* Decoding into f16 or bf16 saturates finite values (found by fuzz_roundtrip_quant): f16 65504
 * through bf16 rounds to 65536, and a qsgd level with s = 1 decodes to the block's norm. */
static void test_decode_saturates(void) {
    uint16_t x[8], y[8];
    for (int i = 0; i < 8; i++) x[i] = i % 2 ? 0xfbff : 0x7bff; /* -+65504 in f16 */
    uint8_t buf[256];
    size_t size;
    mpiucc_params p = q_params(MPIUCC_CODEC_BF16, MPIUCC_DTYPE_F16);
    CHECK(mpiucc_compress(&p, x, 8, buf, sizeof buf, &size) == MPIUCC_OK);
    CHECK(mpiucc_decompress(buf, size, y, sizeof y, NULL) == MPIUCC_OK);
    for (int i = 0; i < 8; i++) CHECKF(y[i] == x[i], "bf16 of f16 %04x -> %04x", x[i], y[i]);
    /* qsgd, s = 1: two largest values, the norm is sqrt(2) times them; the others are 0 */
    for (int i = 2; i < 8; i++) x[i] = 0;
    p = q_params(MPIUCC_CODEC_QSGD, MPIUCC_DTYPE_F16);
    p.levels = 1;
    p.block_size = 8;
    CHECK(mpiucc_compress(&p, x, 8, buf, sizeof buf, &size) == MPIUCC_OK);
    CHECK(mpiucc_decompress(buf, size, y, sizeof y, NULL) == MPIUCC_OK);
    for (int i = 0; i < 8; i++) CHECKF(y[i] == x[i], "qsgd of f16 %04x -> %04x", x[i], y[i]);
    x[0] = 0x7f7f, x[1] = 0xff7f; /* -+bf16 max */
    p.dtype = MPIUCC_DTYPE_BF16;
    CHECK(mpiucc_compress(&p, x, 8, buf, sizeof buf, &size) == MPIUCC_OK);
    CHECK(mpiucc_decompress(buf, size, y, sizeof y, NULL) == MPIUCC_OK);
    for (int i = 0; i < 8; i++) CHECKF(y[i] == x[i], "qsgd of bf16 %04x -> %04x", x[i], y[i]);
}

/* Blocks whose largest |v| is about FLT_MAX decode to finite values (found by
 * fuzz_roundtrip_quant: int8 scale FLT_MAX/127 rounded up, times 127, was Inf). */
static void test_huge_blocks_finite(void) {
    const uint32_t codecs[] = {MPIUCC_CODEC_INT8, MPIUCC_CODEC_INT4, MPIUCC_CODEC_QSGD};
    float x[16], y[16];
    uint8_t buf[512];
    size_t size;
    for (int ci = 0; ci < 3; ci++)
        for (uint32_t s = 1; s <= (codecs[ci] == MPIUCC_CODEC_QSGD ? 127u : 1u); s++) {
            mpiucc_params p = q_params(codecs[ci], MPIUCC_DTYPE_F32);
            p.block_size = 8;
            if (codecs[ci] == MPIUCC_CODEC_QSGD) p.levels = s;
            for (int i = 0; i < 16; i++) x[i] = i < 8 ? (i % 2 ? -FLT_MAX : FLT_MAX) : (i == 8 ? FLT_MAX : 1.0f);
            CHECK(mpiucc_compress(&p, x, 16, buf, sizeof buf, &size) == MPIUCC_OK);
            CHECK(mpiucc_decompress(buf, size, y, sizeof y, NULL) == MPIUCC_OK);
            for (int i = 0; i < 16; i++)
                CHECKF(isfinite(y[i]), "%s s %u: %a -> %a", q_codec_name(codecs[ci]), s, x[i], y[i]);
        }
}

static void test_nonfinite_blocks(void) {
    /* int8, int4, sign, qsgd: a block with NaN or Inf decodes to NaN, other blocks are intact */
    const uint32_t codecs[] = {MPIUCC_CODEC_INT8, MPIUCC_CODEC_INT4, MPIUCC_CODEC_SIGN, MPIUCC_CODEC_QSGD};
    for (size_t ci = 0; ci < 4; ci++) {
        for (int which = 0; which < 2; which++) {
            mpiucc_params p = q_params(codecs[ci], MPIUCC_DTYPE_F32);
            p.block_size = 16;
            float x[40], y[40];
            for (int i = 0; i < 40; i++) x[i] = (float)(i % 5) - 2.0f;
            x[20] = which ? INFINITY : NAN;
            uint8_t buf[512];
            size_t size;
            CHECK(mpiucc_compress(&p, x, 40, buf, sizeof buf, &size) == MPIUCC_OK);
            CHECK(mpiucc_decompress(buf, size, y, sizeof y, NULL) == MPIUCC_OK);
            for (int i = 0; i < 40; i++) {
                if (i >= 16 && i < 32)
                    CHECKF(isnan(y[i]), "%s %d", q_codec_name(codecs[ci]), i);
                else
                    CHECK(!isnan(y[i]) && fabsf(y[i] - x[i]) <= 2.0f);
            }
        }
    }
    /* zero blocks decode to zeros; a subnormal block stays finite and close */
    const uint32_t all[] = {MPIUCC_CODEC_INT8, MPIUCC_CODEC_INT4, MPIUCC_CODEC_SIGN, MPIUCC_CODEC_QSGD,
                            MPIUCC_CODEC_FP16, MPIUCC_CODEC_BF16, MPIUCC_CODEC_TOPK};
    for (size_t ci = 0; ci < 7; ci++) {
        mpiucc_params p = q_params(all[ci], MPIUCC_DTYPE_F32);
        float x[32] = {0}, y[32];
        for (int i = 16; i < 32; i++) x[i] = (float)(i - 23) * 0x1p-140f;
        if (q_block(&p)) p.block_size = 16;
        uint8_t buf[512];
        size_t size;
        CHECK(mpiucc_compress(&p, x, 32, buf, sizeof buf, &size) == MPIUCC_OK);
        CHECK(mpiucc_decompress(buf, size, y, sizeof y, NULL) == MPIUCC_OK);
        for (int i = 0; i < 32; i++) {
            CHECK(isfinite(y[i]));
            if (i < 16) CHECK(y[i] == 0);
            else CHECKF(fabsf(y[i] - x[i]) <= 8 * 0x1p-140f, "%s tiny %d: %g", q_codec_name(all[ci]), i, y[i]);
        }
    }
    /* topk keeps NaN and Inf as the largest magnitudes */
    mpiucc_params p = q_params(MPIUCC_CODEC_TOPK, MPIUCC_DTYPE_F32);
    p.levels = 2;
    p.block_size = 8;
    float x[8] = {1, 2, NAN, 3, -INFINITY, 4, 5, 6}, y[8];
    uint8_t buf[256];
    size_t size;
    CHECK(mpiucc_compress(&p, x, 8, buf, sizeof buf, &size) == MPIUCC_OK);
    CHECK(mpiucc_decompress(buf, size, y, sizeof y, NULL) == MPIUCC_OK);
    CHECK(isnan(y[2]) && y[4] == -INFINITY && y[0] == 0 && y[7] == 0);
    /* sign: +0 -> +scale, -0 -> -scale (the sign bit decides) */
    p = q_params(MPIUCC_CODEC_SIGN, MPIUCC_DTYPE_F32);
    p.block_size = 8;
    float s[8] = {0.0f, -0.0f, 1, -1, 2, -2, 3, -3};
    CHECK(mpiucc_compress(&p, s, 8, buf, sizeof buf, &size) == MPIUCC_OK);
    CHECK(mpiucc_decompress(buf, size, y, sizeof y, NULL) == MPIUCC_OK);
    CHECK(y[0] == 1.5f && y[1] == -1.5f && y[2] == 1.5f && y[3] == -1.5f);
    /* topk ties: lower positions first */
    p = q_params(MPIUCC_CODEC_TOPK, MPIUCC_DTYPE_F32);
    p.block_size = 8;
    p.levels = 3;
    float tx[8] = {1, -2, 2, 0, 2, -2, 1, 0};
    CHECK(mpiucc_compress(&p, tx, 8, buf, sizeof buf, &size) == MPIUCC_OK);
    CHECK(mpiucc_decompress(buf, size, y, sizeof y, NULL) == MPIUCC_OK);
    CHECK(y[1] == -2 && y[2] == 2 && y[4] == 2 && y[5] == 0 && y[0] == 0);
}

/* topk keeps exactly the m best by (|v| bits descending, position ascending): checked against a
 * brute-force count on data with many ties, for the heap (m <= 1024) and radix-select paths. */
static void test_topk_select(void) {
    const uint32_t cases[][2] = {{64, 5}, {64, 64}, {2048, 1024}, {2048, 1025}, {4096, 1500}, {4096, 4095}};
    const size_t n = 9000;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        for (size_t i = 0; i < n; i++) {
            uint64_t r = q_rand();
            x[i] = (float)((int)(r % 7) - 3) * (r & 64 ? 1.0f : 0.5f);
            if (r % 501 == 0) x[i] = NAN;
            if (r % 777 == 0) x[i] = -INFINITY;
            if (ci & 1 && r % 3 == 0) x[i] = (float)q_normal();
        }
        mpiucc_params p = q_params(MPIUCC_CODEC_TOPK, MPIUCC_DTYPE_F32);
        p.block_size = cases[ci][0];
        p.levels = cases[ci][1];
        size_t size;
        mpiucc_status st;
        uint8_t *frame = q_compress(&p, x, NULL, n, &size, &st);
        CHECK(frame != NULL);
        if (!frame) continue;
        const uint8_t *in = frame + MPIUCC_HEADER_SIZE;
        for (size_t i0 = 0; i0 < n; i0 += p.block_size) {
            size_t len = n - i0 < p.block_size ? n - i0 : p.block_size, m = p.levels < len ? p.levels : len;
            static unsigned char kept[65536];
            memset(kept, 0, len);
            for (size_t e = 0; e < m; e++) kept[in[2 * e] | in[2 * e + 1] << 8] = 1;
            for (size_t j = 0; j < len; j++) { /* j is kept iff fewer than m rank above it */
                uint32_t kj;
                memcpy(&kj, &x[i0 + j], 4);
                kj &= 0x7fffffffu;
                size_t above = 0;
                for (size_t o = 0; o < len; o++) {
                    uint32_t ko;
                    memcpy(&ko, &x[i0 + o], 4);
                    ko &= 0x7fffffffu;
                    above += ko > kj || (ko == kj && o < j);
                }
                CHECKF(kept[j] == (above < m), "topk block %u k %u: position %zu", p.block_size, p.levels, j);
            }
            in += 6 * m;
        }
        CHECK(mpiucc_decompress(frame, size, y, n * 4, NULL) == MPIUCC_OK);
        free(frame);
    }
    free(x);
    free(y);
}

/* ---- parameters and headers ---- */

static void test_bad_params(void) {
    for (size_t ci = 0; ci < Q_NCODECS; ci++) {
        uint32_t c = q_codecs[ci];
        mpiucc_params good = q_params(c, MPIUCC_DTYPE_F32);
        CHECK(mpiucc_compress_bound(&good, 100) > 0);
        mpiucc_params bad[12];
        int nb = 0;
        bad[nb] = good, bad[nb++].rounding = 2;
        if (c == MPIUCC_CODEC_FP16 || c == MPIUCC_CODEC_BF16) {
            bad[nb] = good, bad[nb++].block_size = 256;
            bad[nb] = good, bad[nb++].levels = 1;
            bad[nb] = good, bad[nb++].rounding = MPIUCC_ROUND_STOCHASTIC;
        } else {
            bad[nb] = good, bad[nb++].block_size = 4;
            bad[nb] = good, bad[nb++].block_size = 12;
            bad[nb] = good, bad[nb++].block_size = 65544;
            bad[nb] = good, bad[nb++].block_size = 0x80000000u;
        }
        if (c == MPIUCC_CODEC_INT8 || c == MPIUCC_CODEC_INT4 || c == MPIUCC_CODEC_SIGN)
            bad[nb] = good, bad[nb++].levels = 3;
        if (c == MPIUCC_CODEC_SIGN || c == MPIUCC_CODEC_TOPK)
            bad[nb] = good, bad[nb++].rounding = MPIUCC_ROUND_STOCHASTIC;
        if (c == MPIUCC_CODEC_QSGD) bad[nb] = good, bad[nb++].levels = 128;
        if (c == MPIUCC_CODEC_TOPK)
            bad[nb] = good, bad[nb].block_size = 16, bad[nb++].levels = 17;
        if (c == MPIUCC_CODEC_QSGD || c == MPIUCC_CODEC_TOPK) {
            /* levels 0: the conventional default (qsgd s = 16, topk k = block / 16) */
            mpiucc_params dflt = good, expl = good;
            dflt.levels = 0;
            expl.levels = c == MPIUCC_CODEC_QSGD ? 16 : 256 / 16;
            float x[300];
            for (int i = 0; i < 300; i++) x[i] = (float)((i * 37) % 101) - 50.0f;
            uint8_t fa[4096], fb[4096];
            size_t sa = 0, sb = 0;
            CHECK(mpiucc_compress(&dflt, x, 300, fa, sizeof fa, &sa) == MPIUCC_OK);
            CHECK(mpiucc_compress(&expl, x, 300, fb, sizeof fb, &sb) == MPIUCC_OK);
            CHECK(sa == sb && !memcmp(fa, fb, sa));
        }
        for (int i = 0; i < nb; i++) {
            float x[4] = {1, 2, 3, 4};
            uint8_t buf[512];
            size_t size;
            CHECKF(mpiucc_compress(&bad[i], x, 4, buf, sizeof buf, &size) == MPIUCC_ERR_ARG,
                   "%s bad params %d", q_codec_name(c), i);
            CHECK(mpiucc_compress_bound(&bad[i], 4) == 0);
        }
        /* the largest block and both ends of levels are accepted */
        if (q_block(&good)) {
            mpiucc_params ok = good;
            ok.block_size = 65536;
            if (c == MPIUCC_CODEC_QSGD) ok.levels = 127;
            if (c == MPIUCC_CODEC_TOPK) ok.levels = 65536;
            CHECK(mpiucc_compress_bound(&ok, 10) > 0);
            ok.block_size = 8;
            if (c == MPIUCC_CODEC_QSGD || c == MPIUCC_CODEC_TOPK) ok.levels = 1;
            CHECK(mpiucc_compress_bound(&ok, 10) > 0);
        }
    }
}

/* Every single-field edit of a valid header (resealed) is refused, and a damaged payload never
 * makes the decoder misbehave (the sanitizer build checks the accesses). */
static void test_corrupt(void) {
    for (size_t ci = 0; ci < Q_NCODECS; ci++) {
        mpiucc_params p = q_params(q_codecs[ci], MPIUCC_DTYPE_F32);
        if (q_block(&p)) p.block_size = 64;
        size_t n = 203;
        float x[203], y[203];
        q_fill(x, n);
        size_t size;
        mpiucc_status st;
        uint8_t *frame = q_compress(&p, x, NULL, n, &size, &st);
        CHECK(frame != NULL);
        if (!frame) continue;
        uint8_t *f = malloc(size + 64);
        struct { int off, width; uint64_t value; } edits[] = {
            {8, 8, n + 1}, {8, 8, n - 1}, {8, 8, UINT64_MAX >> 4}, {32, 8, size - 64 + 1},
            {32, 8, size - 64 - 1}, {40, 4, 0}, {40, 4, 63}, {40, 4, 72}, {40, 4, 65544},
            {44, 4, 0x100}, {44, 4, 0xffffffffu}, {24, 8, 0x3ff0000000000000ull},
            {16, 8, 0}, {16, 8, 0x3ff0000000000000ull}};
        for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
            memcpy(f, frame, size);
            uint8_t before[8];
            memcpy(before, f + edits[e].off, 8);
            if (edits[e].width == 8) mpiucc_put_u64(f + edits[e].off, edits[e].value);
            else mpiucc_put_u32(f + edits[e].off, (uint32_t)edits[e].value);
            if (!memcmp(before, f + edits[e].off, 8)) continue; /* not an edit for this codec */
            if (edits[e].off == 8 && edits[e].value < n + 2 &&
                q_payload_formula(&p, edits[e].value) == size - MPIUCC_HEADER_SIZE)
                continue; /* a consistent frame of another count (bit-packed last byte) */
            q_reseal(f);
            st = mpiucc_decompress(f, size + 64, y, sizeof y, NULL);
            CHECKF(st != MPIUCC_OK, "%s edit %zu accepted", q_codec_name(q_codecs[ci]), e);
        }
        /* aux values that decoders must refuse or may accept, never crash on */
        for (uint32_t aux = 0; aux < 300; aux += 7) {
            memcpy(f, frame, size);
            mpiucc_put_u32(f + 44, aux);
            q_reseal(f);
            (void)mpiucc_decompress(f, size, y, sizeof y, NULL);
        }
        /* truncated frames */
        for (size_t cut = 0; cut < size; cut += 1 + cut / 4)
            CHECK(mpiucc_decompress(frame, cut, y, sizeof y, NULL) != MPIUCC_OK);
        /* random payload damage: decodes or reports corruption, never out of bounds */
        for (int trial = 0; trial < 200; trial++) {
            memcpy(f, frame, size);
            size_t plen = size - MPIUCC_HEADER_SIZE;
            if (!plen) break;
            for (int k = 0; k < 4; k++) f[MPIUCC_HEADER_SIZE + q_rand() % plen] = (uint8_t)q_rand();
            st = mpiucc_decompress(f, size, y, sizeof y, NULL);
            CHECK(st == MPIUCC_OK || st == MPIUCC_ERR_CORRUPT);
            st = mpiucc_decompress_add(f, size, y, sizeof y, NULL);
            CHECK(st == MPIUCC_OK || st == MPIUCC_ERR_CORRUPT);
        }
        free(f);
        free(frame);
    }
    /* padding bits, topk positions: rejected when wrong */
    float x[13];
    q_fill(x, 13);
    const uint32_t padded[] = {MPIUCC_CODEC_INT4, MPIUCC_CODEC_SIGN, MPIUCC_CODEC_QSGD};
    for (int k = 0; k < 3; k++) {
        mpiucc_params p = q_params(padded[k], MPIUCC_DTYPE_F32);
        size_t size;
        mpiucc_status st;
        float y[13];
        uint8_t *frame = q_compress(&p, x, NULL, 13, &size, &st);
        if (!frame) { CHECK(0); continue; }
        frame[size - 1] |= 0x80;
        CHECK(mpiucc_decompress(frame, size, y, sizeof y, NULL) == MPIUCC_ERR_CORRUPT);
        free(frame);
    }
    mpiucc_params p = q_params(MPIUCC_CODEC_TOPK, MPIUCC_DTYPE_F32);
    p.levels = 3;
    size_t size;
    mpiucc_status st;
    float y[13];
    uint8_t *frame = q_compress(&p, x, NULL, 13, &size, &st);
    if (frame) {
        uint8_t *pos = frame + MPIUCC_HEADER_SIZE;
        pos[2] = pos[0], pos[3] = pos[1]; /* repeated position */
        CHECK(mpiucc_decompress(frame, size, y, sizeof y, NULL) == MPIUCC_ERR_CORRUPT);
        pos[2] = 13, pos[3] = 0; /* past the block */
        pos[4] = 14, pos[5] = 0;
        CHECK(mpiucc_decompress_add(frame, size, y, sizeof y, NULL) == MPIUCC_ERR_CORRUPT);
        free(frame);
    }
}

int main(void) {
    const size_t sizes[] = {0, 1, 7, 255, 256, 257, 100003};
    for (int level = MPIUCC_SIMD_GENERIC; level <= MPIUCC_SIMD_AVX2; level++) {
        if ((int)mpiucc_set_simd_level((mpiucc_simd)level) != level) continue;
        for (size_t ci = 0; ci < Q_NCODECS; ci++)
            for (size_t ti = 0; ti < 4; ti++)
                for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                    size_t n = sizes[si];
                    if (ti && n > 1000) n = 10007;
                    test_roundtrip(q_codecs[ci], q_dtypes[ti], n, 0);
                }
        /* other block sizes: block - 1, block, block + 1 around them */
        const uint32_t blocks[] = {8, 24, 1000, 65536};
        for (size_t ci = 2; ci < Q_NCODECS; ci++)
            for (size_t bi = 0; bi < 4; bi++)
                for (int d = -1; d <= 1; d++) test_roundtrip(q_codecs[ci], MPIUCC_DTYPE_F32, blocks[bi] + d, blocks[bi]);
        test_roundtrip(MPIUCC_CODEC_INT8, MPIUCC_DTYPE_F32, 3 * 65536 + 5, 65536);
        test_half_policies();
        test_decode_saturates();
        test_huge_blocks_finite();
        test_nonfinite_blocks();
    }
    mpiucc_set_simd_level(MPIUCC_SIMD_AVX2);
    test_topk_select();
    test_bad_params();
    test_corrupt();
    if (q_failures) {
        fprintf(stderr, "test_quant: %d failures\n", q_failures);
        return 1;
    }
    printf("test_quant: ok\n");
    return 0;
}
