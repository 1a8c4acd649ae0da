/* fuzz_util.h: helpers shared by the fuzz targets (header only).
 *
 * The targets use the public API only (codecs/include/mpiucc.h), except fuzz_rans.c, which
 * reaches the entropy stage directly. FZ_ASSERT aborts with the failed condition, so that a
 * broken contract is a crash for libFuzzer and for the standalone replay driver alike.
 */
#ifndef MPIUCC_FUZZ_UTIL_H
#define MPIUCC_FUZZ_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpiucc.h"

#define FZ_ASSERT(cond)                                                             \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: contract violated: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                \
        }                                                                           \
    } while (0)

/* Frames whose header asks for more elements (up to 2^60) are decoded into a small buffer:
 * they must be refused (CAPACITY) at once, with nothing allocated or written. run_fuzzers.sh
 * runs libFuzzer with -malloc_limit_mb=64, so a decoder that allocated by the header's count
 * would crash there. */
#define FZ_MAX_COUNT ((uint64_t)1 << 20)
#define FZ_SENTINEL 0xa5

static inline uint32_t fz_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t fz_u64(const uint8_t *p) {
    return (uint64_t)fz_u32(p) | (uint64_t)fz_u32(p + 4) << 32;
}
static inline void fz_put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Make the checksums of the frame in f (size bytes) right, so that mutations reach the field
 * checks and the payload decoders instead of stopping at a checksum. */
static inline void fz_fix_checksums(uint8_t *f, size_t size) {
    if (size < MPIUCC_HEADER_SIZE) return;
    uint64_t ps = fz_u64(f + 32);
    if ((f[7] & MPIUCC_FLAG_PAYLOAD_CHECKSUM) && ps <= size - MPIUCC_HEADER_SIZE)
        fz_put_u32(f + 56, mpiucc_crc32c(0, f + MPIUCC_HEADER_SIZE, (size_t)ps));
    fz_put_u32(f + 60, mpiucc_crc32c(0, f, 60));
}

/* True when no byte of buf differs from FZ_SENTINEL. */
static inline int fz_untouched(const uint8_t *buf, size_t size) {
    for (size_t i = 0; i < size; i++)
        if (buf[i] != FZ_SENTINEL) return 0;
    return 1;
}

/* Exact |x - y| <= eb (TwoSum; float differences are exact in double). */
static inline int fz_within(double x, double y, double eb) {
    double s = x - y, bb = s - x, err = (x - (s - bb)) + (-y - bb);
    if (fabs(s) != eb) return fabs(s) < eb;
    return err == 0 || (err < 0) == (s > 0);
}

/* Decode the frame f with the buffers sized from its header, checking the decoder's
 * contracts: every status is one of the enum, a failure writes nothing, a success reports
 * the header's count (raw: the payload itself), decompress_add gives the same status, a
 * buffer one element short is refused. f must be a heap copy of exactly size bytes (out-of-bounds reads
 * are then caught by the sanitizer). */
static inline void fz_decode_checked(const uint8_t *f, size_t size) {
    mpiucc_header h;
    mpiucc_status st = mpiucc_read_header(f, size, &h);
    FZ_ASSERT(st <= MPIUCC_ERR_NOMEM);
    size_t count = 0;
    if (st != MPIUCC_OK) {
        uint8_t dummy[16];
        memset(dummy, FZ_SENTINEL, sizeof dummy);
        FZ_ASSERT(mpiucc_decompress(f, size, dummy, sizeof dummy, &count) == st);
        FZ_ASSERT(fz_untouched(dummy, sizeof dummy));
        return;
    }
    size_t es = mpiucc_dtype_size((mpiucc_dtype)h.dtype);
    FZ_ASSERT(h.version >= 1 && h.version <= MPIUCC_FORMAT_VERSION);
    FZ_ASSERT(h.codec < MPIUCC_CODEC_COUNT_ && es);
    FZ_ASSERT(h.count < ((uint64_t)1 << 60) && h.bound >= 0);
    FZ_ASSERT(h.payload_size <= size - MPIUCC_HEADER_SIZE);
    if (h.count > FZ_MAX_COUNT) {
        uint8_t small[64];
        memset(small, FZ_SENTINEL, sizeof small);
        FZ_ASSERT(mpiucc_decompress(f, size, small, sizeof small, &count) == MPIUCC_ERR_CAPACITY);
        FZ_ASSERT(mpiucc_decompress_add(f, size, small, sizeof small, &count) ==
                  MPIUCC_ERR_CAPACITY);
        FZ_ASSERT(fz_untouched(small, sizeof small));
        return;
    }
    size_t cap = (size_t)h.count * es;
    uint8_t *out = (uint8_t *)malloc(cap ? cap : 1), *sum = (uint8_t *)malloc(cap ? cap : 1);
    FZ_ASSERT(out && sum);
    memset(out, FZ_SENTINEL, cap);
    st = mpiucc_decompress(f, size, out, cap, &count);
    FZ_ASSERT(st <= MPIUCC_ERR_NOMEM);
    if (st != MPIUCC_OK) {
        /* decoders validate the whole payload before writing any output */
        FZ_ASSERT(fz_untouched(out, cap));
    } else {
        FZ_ASSERT(count == h.count);
        if (h.codec == MPIUCC_CODEC_RAW) FZ_ASSERT(!memcmp(out, f + MPIUCC_HEADER_SIZE, cap));
    }
    memset(sum, FZ_SENTINEL, cap);
    mpiucc_status st_add = mpiucc_decompress_add(f, size, sum, cap, NULL);
    FZ_ASSERT(st_add == st);
    if (st != MPIUCC_OK) FZ_ASSERT(fz_untouched(sum, cap));
    /* the one-pass path with the caller's scratch: the same status and the same bytes */
    size_t need = mpiucc_decompress_scratch_size(&h);
    FZ_ASSERT(need <= h.count);
    uint8_t *scratch = (uint8_t *)malloc(need ? need : 1);
    FZ_ASSERT(scratch);
    memset(sum, FZ_SENTINEL, cap);
    mpiucc_status st_s = mpiucc_decompress_scratch(f, size, sum, cap, scratch, need, 0, NULL);
    FZ_ASSERT(st_s == st);
    FZ_ASSERT(st != MPIUCC_OK ? fz_untouched(sum, cap) : !memcmp(sum, out, cap));
    free(scratch);
    if (cap) {
        FZ_ASSERT(mpiucc_decompress(f, size, out, cap - 1, NULL) == MPIUCC_ERR_CAPACITY);
        FZ_ASSERT(mpiucc_decompress(f, size, NULL, cap, NULL) == MPIUCC_ERR_ARG);
    }
    free(out);
    free(sum);
}

/* Decode data as a frame twice: as given (checksums as they are) and, when it is at least a
 * header long, with codec (when >= 0) and the aux low byte (when >= 0) forced and its
 * checksums fixed. */
static inline void fz_decode_both(const uint8_t *data, size_t size, int codec, int aux_lo) {
    uint8_t *f = (uint8_t *)calloc(1, size ? size : 1);
    FZ_ASSERT(f);
    if (size) memcpy(f, data, size);
    fz_decode_checked(f, size);
    if (size >= MPIUCC_HEADER_SIZE) {
        if (codec >= 0) f[5] = (uint8_t)codec;
        if (aux_lo >= 0) f[44] = (uint8_t)aux_lo;
        fz_fix_checksums(f, size);
        fz_decode_checked(f, size);
    }
    free(f);
}

#endif /* MPIUCC_FUZZ_UTIL_H */
