/* mpiucc.h: the codec library of mpiucc (error-bounded and quantizing float codecs).
 *
 * Every function is stateless and reentrant: the caller owns every buffer and the only global
 * state is a write-once CPU-dispatch choice. Calls may therefore run concurrently and with the
 * Python GIL released.
 *
 * Allocation: decoding (mpiucc_read_header, mpiucc_decompress, mpiucc_decompress_add,
 * mpiucc_decompress_scratch) never allocates; it uses at most about 100 KiB of stack (per
 * thread, when a large ebq frame is decoded on threads: their stacks are the threads' own). Two calls allocate one scratch buffer of
 * count bytes, freed before they return: mpiucc_compress(_ef) at the dense level (a quarter of
 * an f32 input), and mpiucc_ebq_add when frame a is dense (only when dst_capacity holds count
 * bytes past the header). A failed allocation returns MPIUCC_ERR_NOMEM. Calls on threads also
 * allocate a buffer per thread or segment for its part of the frame (freed before they return;
 * when that fails they run on one thread). Nothing else allocates.
 *
 * Frames are untrusted input: a header may claim up to 2^60 elements in a few bytes. Decoders
 * check the header against dst_capacity before any work in proportion to the count, so the
 * caller's dst_capacity is the limit; check codec, dtype and count with mpiucc_read_header
 * against what you expect before sizing a buffer from a frame (codecs/FORMAT.md, "Limits").
 *
 * Counts are numbers of elements; *_size and *_capacity are numbers of bytes.
 * Every compressed buffer is a self-describing frame (codecs/FORMAT.md).
 */
#ifndef MPIUCC_H
#define MPIUCC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPIUCC_VERSION_MAJOR 0
#define MPIUCC_VERSION_MINOR 1
#define MPIUCC_VERSION_PATCH 0
/* The newest frame format version; readers take 1, 2 and 3. Versions 2 and 3 changed only the
 * ebq dense payload (2: independent rANS segments; 3: a symbol per bit length for large
 * indices): ebq dense frames are written as 3, every other frame as 1 (codecs/FORMAT.md). */
#define MPIUCC_FORMAT_VERSION 3
#define MPIUCC_HEADER_SIZE 64

/* Status codes. Their values are pinned: they cross the Python boundary. */
typedef enum {
    MPIUCC_OK = 0,
    MPIUCC_ERR_ARG = 1,              /* an argument is invalid (NULL, bad enum, bad bound) */
    MPIUCC_ERR_CAPACITY = 2,         /* the output buffer is too small */
    MPIUCC_ERR_TRUNCATED = 3,        /* the input is shorter than its frame says */
    MPIUCC_ERR_MAGIC = 4,            /* the input does not start with the frame magic */
    MPIUCC_ERR_VERSION = 5,          /* the frame's format version is not supported */
    MPIUCC_ERR_HEADER_CHECKSUM = 6,  /* the header checksum does not match */
    MPIUCC_ERR_PAYLOAD_CHECKSUM = 7, /* the payload checksum does not match */
    MPIUCC_ERR_CORRUPT = 8,          /* a field or the payload is inconsistent */
    MPIUCC_ERR_UNSUPPORTED = 9,      /* codec and dtype (or level) do not go together */
    MPIUCC_ERR_MISMATCH = 10,        /* two frames cannot be combined (codec, grid, count) */
    MPIUCC_ERR_OVERFLOW = 11,        /* an integer sum of indices would overflow */
    MPIUCC_ERR_NOMEM = 12            /* a scratch allocation failed (out of memory) */
} mpiucc_status;

/* A short English sentence for a status; never NULL. */
const char *mpiucc_status_string(mpiucc_status status);

/* Codec identifiers, as stored in frames. */
typedef enum {
    MPIUCC_CODEC_RAW = 0,  /* lossless copy (baseline and fallback) */
    MPIUCC_CODEC_EBQ = 1,  /* error-bounded quantization onto a fixed grid, packed */
    MPIUCC_CODEC_FP16 = 2, /* IEEE half precision, round to nearest even */
    MPIUCC_CODEC_BF16 = 3, /* bfloat16, round to nearest even */
    MPIUCC_CODEC_INT8 = 4, /* blockwise absmax int8 */
    MPIUCC_CODEC_INT4 = 5, /* blockwise absmax int4 */
    MPIUCC_CODEC_SIGN = 6, /* 1 bit per element, per-block mean-absolute scale */
    MPIUCC_CODEC_QSGD = 7, /* s-level stochastic quantization with per-block norm */
    MPIUCC_CODEC_TOPK = 8, /* largest-magnitude k per block as (index, value) pairs */
    MPIUCC_CODEC_COUNT_ = 9
} mpiucc_codec;

/* Element types of inputs and outputs. */
typedef enum {
    MPIUCC_DTYPE_F32 = 1,
    MPIUCC_DTYPE_F64 = 2,
    MPIUCC_DTYPE_F16 = 3,
    MPIUCC_DTYPE_BF16 = 4
} mpiucc_dtype;

/* Size in bytes of one element of a dtype; 0 for an unknown dtype. */
size_t mpiucc_dtype_size(mpiucc_dtype dtype);

/* ebq: how error_bound is read. */
typedef enum {
    MPIUCC_MODE_ABS = 0, /* |x - y| <= error_bound for every element */
    MPIUCC_MODE_REL = 1, /* |x - y| <= error_bound * (max - min) over the finite values */
    MPIUCC_MODE_RMS = 2  /* |x - y| <= error_bound * sqrt(mean(x^2)) over the finite values,
                            so that ||x - y||_2 <= error_bound * ||x||_2 when all are finite */
} mpiucc_mode;

/* ebq: speed against size; one frame format for both. */
typedef enum {
    MPIUCC_LEVEL_FAST = 0,  /* per-block bit packing of zigzag indices */
    MPIUCC_LEVEL_DENSE = 1  /* indices through an rANS entropy stage */
} mpiucc_level;

/* ebq: transform of the indices before packing. */
typedef enum {
    MPIUCC_PREDICTOR_NONE = 0,
    MPIUCC_PREDICTOR_DELTA = 1 /* index minus the previous index: smooth data */
} mpiucc_predictor;

/* Quantizers: rounding of values to their levels. */
typedef enum {
    MPIUCC_ROUND_NEAREST = 0,   /* to nearest, ties to even */
    MPIUCC_ROUND_STOCHASTIC = 1 /* unbiased, from a counter-based generator seeded by seed */
} mpiucc_rounding;

/* Frame flags (header byte 7). Bits not named here are reserved and must be zero. */
#define MPIUCC_FLAG_PAYLOAD_CHECKSUM 0x01u /* the header carries a CRC-32C of the payload */
/* Set by the encoder, never by the caller: the frame decodes to values of which at least one
 * is NaN or +-Inf, because its input held one (codecs/FORMAT.md, "Non-finite values"). */
#define MPIUCC_FLAG_NONFINITE 0x02u
#define MPIUCC_FLAGS_KNOWN_ 0x03u

/* What to compress and how. Start from MPIUCC_PARAMS_INIT; reserved fields must stay zero. */
typedef struct {
    uint32_t codec;       /* mpiucc_codec */
    uint32_t dtype;       /* mpiucc_dtype of the input (and of the decoded output) */
    double error_bound;   /* ebq: the bound, absolute or relative to the range (mode) */
    uint32_t mode;        /* ebq: mpiucc_mode */
    uint32_t level;       /* ebq: mpiucc_level */
    uint32_t predictor;   /* ebq: mpiucc_predictor */
    uint32_t block_size;  /* quantizers: elements per scale block; 0 for the codec's default */
    uint32_t levels;      /* qsgd: levels s (1..127; 0: 16); topk: k per block (0: block/16) */
    uint32_t rounding;    /* quantizers: mpiucc_rounding */
    uint64_t seed;        /* stochastic rounding: seed of the counter-based generator */
    uint32_t flags;       /* MPIUCC_FLAG_PAYLOAD_CHECKSUM or 0 */
    uint32_t threads;     /* ebq: threads at most; 0: the default (mpiucc_default_threads) */
    uint32_t reserved[6]; /* must be zero */
} mpiucc_params;

#define MPIUCC_PARAMS_INIT \
    { MPIUCC_CODEC_EBQ, MPIUCC_DTYPE_F32, 0.0, MPIUCC_MODE_ABS, MPIUCC_LEVEL_FAST, \
      MPIUCC_PREDICTOR_NONE, 0, 0, MPIUCC_ROUND_NEAREST, 0, 0, 0, {0, 0, 0, 0, 0, 0} }

/* A decoded frame header (codecs/FORMAT.md has the byte layout). */
typedef struct {
    uint32_t version;          /* format version */
    uint32_t codec;            /* mpiucc_codec */
    uint32_t dtype;            /* mpiucc_dtype of the decoded elements */
    uint32_t flags;            /* MPIUCC_FLAG_* */
    uint64_t count;            /* number of elements */
    double bound;              /* guaranteed max absolute error; 0 lossless; +inf none */
    double param;              /* codec-specific: ebq grid step */
    uint64_t payload_size;     /* bytes after the header */
    uint32_t block;            /* codec-specific: elements per block */
    uint32_t aux;              /* codec-specific: ebq level and predictor, qsgd levels, ... */
    uint32_t payload_checksum; /* CRC-32C of the payload when the flag is set, else 0 */
} mpiucc_header;

/* Upper bound of the frame size of count elements compressed with params;
 * 0 when params are invalid. */
size_t mpiucc_compress_bound(const mpiucc_params *params, size_t count);

/* Compress count elements of src (params->dtype) into one frame at dst.
 * On MPIUCC_OK, *dst_size holds the frame's size. dst_capacity of
 * mpiucc_compress_bound() bytes always suffices. */
mpiucc_status mpiucc_compress(const mpiucc_params *params, const void *src, size_t count,
                              void *dst, size_t dst_capacity, size_t *dst_size);

/* Compress with error feedback, fused into one pass over memory:
 * v = src + residual; frame = compress(v); residual = v - decompress(frame).
 * residual has count elements of params->dtype and is read and overwritten. */
mpiucc_status mpiucc_compress_ef(const mpiucc_params *params, const void *src,
                                 void *residual, size_t count, void *dst,
                                 size_t dst_capacity, size_t *dst_size);

/* Validate the header of the frame at src (checks magic, version, every field, the header
 * checksum and that src_size holds the whole frame) and fill *header. */
mpiucc_status mpiucc_read_header(const void *src, size_t src_size, mpiucc_header *header);

/* Decompress the frame at src into dst (header.count elements of header.dtype).
 * *count, when not NULL, receives the element count. MPIUCC_ERR_CAPACITY when header.count
 * elements do not fit in dst_capacity (checked first). The whole payload is validated before
 * dst is written: on any error dst is untouched. No allocation. */
mpiucc_status mpiucc_decompress(const void *src, size_t src_size, void *dst,
                                size_t dst_capacity, size_t *count);

/* Like mpiucc_decompress, but dst[i] += decoded[i] (in the frame's dtype). Summing frames
 * in a fixed order with this gives bitwise-identical results on every machine. */
mpiucc_status mpiucc_decompress_add(const void *src, size_t src_size, void *dst,
                                    size_t dst_capacity, size_t *count);

/* Scratch bytes that let mpiucc_decompress_scratch decode the frame of a validated header in
 * one pass: header->count for an ebq dense frame, 0 for every other frame. */
size_t mpiucc_decompress_scratch_size(const mpiucc_header *header);

/* mpiucc_decompress (add = 0) or mpiucc_decompress_add (add = 1) with caller-owned scratch:
 * with scratch_size >= mpiucc_decompress_scratch_size, an ebq dense frame's symbols are
 * decoded once into the scratch instead of twice in chunks (about 1.3x faster); with less
 * (or NULL) this is the plain call. Same checks, same results, same bytes; no allocation.
 * scratch must not overlap src or dst; it is written even when the call fails. */
mpiucc_status mpiucc_decompress_scratch(const void *src, size_t src_size, void *dst,
                                        size_t dst_capacity, void *scratch,
                                        size_t scratch_size, int add, size_t *count);

/* mpiucc_decompress_scratch on up to threads threads (0: the default). The frame's bytes
 * decide the result; the thread count never changes it. */
mpiucc_status mpiucc_decompress_threads(const void *src, size_t src_size, void *dst,
                                        size_t dst_capacity, void *scratch, size_t scratch_size,
                                        int add, unsigned threads, size_t *count);

/* ---- threads ----
 * ebq calls over large arrays (compress, compress_ef, decompress, ebq_add) split the array
 * over threads created by the call and joined before it returns (no pool: nothing survives
 * fork, nothing is shared between concurrent calls). Frames are byte-identical whatever the
 * thread count. Which paths run threaded: codecs/FORMAT.md, "Threads".
 *
 * The default thread count: MPIUCC_THREADS from the environment when set (a positive integer),
 * else the cores this process may run on (sched_getaffinity), divided by the local rank count
 * (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS, LOCAL_WORLD_SIZE) when the process is not
 * bound to a subset of the cores; at most 64. A call with the default starts one thread per
 * 2^18 elements at most, so small arrays stay on the calling thread; an explicit thread count
 * is capped at one thread per 256 elements. Reads the environment: not thread-safe against
 * setenv. */
unsigned mpiucc_default_threads(void);

/* ---- ebq in the integer domain (for exact reductions of compressed data) ----
 * The grid is fixed by the step alone: index = round(x / step). Frames made with the same
 * step, dtype and count can be added index by index without any rounding. */

/* Quantize count elements of src onto the grid of params (ebq, mode ABS: step = 2*bound).
 * indices[i] receives the index, or 0 where element i is an outlier (NaN, Inf, an index
 * out of range, or a bound that the grid cannot meet); outlier positions go to
 * outlier_pos (capacity outlier_capacity), their number to *n_outliers. */
mpiucc_status mpiucc_ebq_quantize(const mpiucc_params *params, const void *src, size_t count,
                                  int32_t *indices, uint64_t *outlier_pos,
                                  size_t outlier_capacity, size_t *n_outliers);

/* Pack count indices into the fast-level block stream (FORMAT.md: ebq payload). */
size_t mpiucc_pack_bound(size_t count);
mpiucc_status mpiucc_pack_indices(const int32_t *indices, size_t count, void *dst,
                                  size_t dst_capacity, size_t *dst_size);

/* Unpack a block stream made by mpiucc_pack_indices; *src_used receives its size. */
mpiucc_status mpiucc_unpack_indices(const void *src, size_t src_size, int32_t *indices,
                                    size_t count, size_t *src_used);

/* Add two ebq frames (same dtype, count and step; any level and predictor) into one ebq
 * frame at dst, of the level of a, whose indices are the exact sums. An element that is an
 * outlier in either input becomes an outlier of the result with value a + b, computed in
 * the dtype. The result's bound field is the sum of the inputs' bounds. Frames that differ in
 * count (or codec, dtype, step) give MPIUCC_ERR_MISMATCH. dst_capacity must hold the header
 * and count bytes (a dense) or 16 + count/32 bytes (fast) before anything else is done, else
 * MPIUCC_ERR_CAPACITY; a dense a then takes count bytes of scratch (MPIUCC_ERR_NOMEM).
 * mpiucc_ebq_add_bound is arithmetic on the headers: it grows with their count, so check
 * the count against what you expect before allocating that much. */
size_t mpiucc_ebq_add_bound(const void *a, size_t a_size, const void *b, size_t b_size);
mpiucc_status mpiucc_ebq_add(const void *a, size_t a_size, const void *b, size_t b_size,
                             void *dst, size_t dst_capacity, size_t *dst_size);
/* mpiucc_ebq_add on up to threads threads (0: the default); the same bytes. */
mpiucc_status mpiucc_ebq_add_threads(const void *a, size_t a_size, const void *b, size_t b_size,
                                     void *dst, size_t dst_capacity, unsigned threads,
                                     size_t *dst_size);

/* ---- statistics of an input (what an error budget is made from) ---- */

/* Finite min, finite max, sum of squares and non-finite count of an array. */
typedef struct {
    double min;          /* smallest finite value; 0 when none is finite */
    double max;          /* largest finite value; 0 when none is finite */
    double sum_squares;  /* sum of (scale * v)^2 over the finite v in double; inf on overflow */
    uint64_t nonfinite;  /* number of NaN and +-Inf values */
} mpiucc_stats;

/* One pass over count elements of src (dtype F32 or F64) filling *stats. The sum of squares
 * is accumulated in double in a fixed order (element i into lane i mod 16, lanes added in a
 * fixed tree), so every SIMD level gives the same bits; pass scale = 1, 1 / max|v| to keep a
 * float64 sum from overflowing, or 0 to skip the squares (sum_squares is then 0: min and max
 * alone take about half the time). MPIUCC_ERR_ARG for a NULL pointer (src may be NULL when
 * count is 0), another dtype (MPIUCC_ERR_UNSUPPORTED for F16/BF16) or a scale that is
 * negative or not finite. Reentrant; reads src only. */
mpiucc_status mpiucc_finite_stats(const void *src, size_t count, mpiucc_dtype dtype,
                                  double scale, mpiucc_stats *stats);

/* ---- CPU dispatch ---- */

typedef enum { MPIUCC_SIMD_GENERIC = 0, MPIUCC_SIMD_AVX2 = 1 } mpiucc_simd;

/* The SIMD level the kernels use: the best the CPU has (AVX2 needs AVX2, F16C and BMI2, all
 * checked at run time, with the OS's support of the AVX state), or GENERIC when the
 * environment variable MPIUCC_FORCE_GENERIC is set to a non-empty value other than "0" at
 * first use. Every level writes the same bytes. */
mpiucc_simd mpiucc_simd_level(void);

/* Force a SIMD level (for tests and benches); returns the level in force afterwards, which is
 * lower than asked when the CPU lacks it. Not thread-safe against running codec calls. */
mpiucc_simd mpiucc_set_simd_level(mpiucc_simd level);

/* Name of a SIMD level ("generic", "avx2"). */
const char *mpiucc_simd_name(mpiucc_simd level);

/* CRC-32C (Castagnoli) of size bytes, continuing from crc (start with 0). */
uint32_t mpiucc_crc32c(uint32_t crc, const void *data, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* MPIUCC_H */
