/* ebq.h: private interface of the ebq codec (error-bounded quantization onto a fixed grid).
 *
 * The grid: index q = round(x / step), decoded y = (dtype)((double)q * step). An element is
 * stored as an index only when |q| < 2^24 and |x - y| <= eb holds in exact arithmetic;
 * otherwise it is an outlier, stored losslessly. The decision (ebq_decide_*) is one scalar
 * function that every SIMD path either calls or provably agrees with, so all paths write the
 * same bytes. codecs/FORMAT.md describes the payload.
 */
#ifndef MPIUCC_EBQ_H
#define MPIUCC_EBQ_H

#include "entropy.h"
#include "internal.h"
#include "threads.h"

#define EBQ_BLOCK 32           /* indices per width byte */
#define EBQ_CHUNK 256          /* elements per call of a quantize kernel (8 blocks) */
#define EBQ_SUBHEADER 16       /* fast level: outlier count, packed size (u64 each) */
#define EBQ_DENSE_SUBHEADER 24 /* dense level v1: outlier count, escape size, rANS size */
#define EBQ_DENSE_SEGMENT ((size_t)1 << 20) /* dense level v2: symbols per rANS stream */
#define EBQ_MAX_Q 16777216     /* |q| < 2^24, else the element is an outlier */
#define EBQ_ENCODE_MAX_WIDTH 26 /* widest block a fresh encode can write (DELTA) */
#define EBQ_MAX_EB 0x1p1022    /* larger bounds are lowered to this (step stays finite) */

/* The grid and everything derived from it that the kernels need. */
typedef struct {
    mpiucc_dtype dtype;
    size_t es;    /* element size in bytes */
    double step;  /* grid step (header param) */
    double eb;    /* the bound checked for every element (header bound) */
    double inv_d; /* 1 / step: first guess of f64 indices */
    float inv_f;  /* (float)(1 / step): first guess of f32 indices */
    float tol_f;  /* f32 fast filter: |fl32(x - y)| <= tol_f implies |x - y| <= eb */
    int delta;    /* predictor DELTA */
} ebq_grid;

/* Where outliers go. Staging mode: records in their final byte order, written backwards
 * (byte-reversed) downwards from top, never below floor. List mode: positions only. */
typedef struct {
    uint8_t *lo;          /* staging: lowest byte written so far */
    uint8_t *top;         /* staging: end of the staging area */
    const uint8_t *floor; /* staging: first byte it may not use (end of the packed data) */
    uint64_t *pos;        /* list mode when not NULL: positions, pos_cap of them at most */
    size_t pos_cap;
    size_t es;            /* value size */
    uint64_t count;       /* outliers pushed */
    uint64_t next;        /* position after the last outlier pushed */
    int full;             /* staging ran into floor */
    int nonfinite;        /* some value pushed is NaN or +-Inf */
} ebq_sink;

/* Record an outlier at position pos (ascending) with its raw value bits. */
void ebq_sink_push(ebq_sink *s, uint64_t pos, const void *value);
/* Size in bytes of a LEB128 varint. */
static inline size_t ebq_varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

/* ---- the decision (scalar, shared by every path) ---- */

/* Exact |x - y| <= eb for f32 x and y = fl32(q * step), q an integer. Rounding is monotone,
 * so an exact difference <= eb is never rejected. The f64 difference of two floats is
 * inexact only when one is below 2^-28 times the other; y = 0 is exact, and q != 0 gives
 * |y| >= eb (|q * step| >= 2 eb, and rounding to f32 at most halves a value >= 2^-149),
 * so then either |x| > 2^28 eb (the difference is far above eb either way), or y is far
 * above eb (normal range: |y| >= 2 eb (1 - 2^-24)), or x is a float below 2^-153, i.e. 0. */
static inline int ebq_check_f32(float x, float y, double eb) {
    return fabs((double)x - (double)y) <= eb;
}

/* Exact |x - y| <= eb for f64: the rounded difference decides unless it equals eb, where the
 * rounding error (TwoSum) decides. x and y never have opposite signs, so nothing overflows. */
static inline int ebq_check_f64(double x, double y, double eb) {
    double s = x - y;
    if (fabs(s) < eb) return 1;
    if (!(fabs(s) == eb)) return 0;
    double bb = s - x;
    double err = (x - (s - bb)) + (-y - bb);
    return err == 0 || (err < 0) == (s > 0);
}

/* nearbyint (round half to even) without a library call: below 2^23 (2^52) adding and
 * subtracting 2^23 (2^52) rounds to an integer; above, every value is one already. */
static inline float ebq_rint_f32(float t) {
    float a = fabsf(t);
    if (!(a < 0x1p23f)) return t;
    return copysignf((a + 0x1p23f) - 0x1p23f, t);
}
static inline double ebq_rint_f64(double t) {
    double a = fabs(t);
    if (!(a < 0x1p52)) return t;
    return copysign((a + 0x1p52) - 0x1p52, t);
}

/* Index of f32 x on the grid: first the float guess round(x * inv_f), then round(x / step)
 * in double; 0 when neither meets the bound (an outlier). *y receives the decoded value. */
static inline int ebq_decide_f32(const ebq_grid *g, float x, int32_t *q, float *y) {
    float t = ebq_rint_f32(x * g->inv_f);
    if (fabsf(t) < (float)EBQ_MAX_Q) {
        int32_t qi = (int32_t)t;
        float yy = (float)((double)qi * g->step);
        if (ebq_check_f32(x, yy, g->eb)) { *q = qi; *y = yy; return 1; }
    }
    double td = ebq_rint_f64((double)x / g->step);
    if (fabs(td) < (double)EBQ_MAX_Q) {
        int32_t qi = (int32_t)td;
        float yy = (float)((double)qi * g->step);
        if (ebq_check_f32(x, yy, g->eb)) { *q = qi; *y = yy; return 1; }
    }
    *q = 0;
    *y = x;
    return 0;
}

static inline int ebq_decide_f64(const ebq_grid *g, double x, int32_t *q, double *y) {
    double t = ebq_rint_f64(x * g->inv_d);
    if (fabs(t) < (double)EBQ_MAX_Q) {
        int32_t qi = (int32_t)t;
        double yy = (double)qi * g->step;
        if (ebq_check_f64(x, yy, g->eb)) { *q = qi; *y = yy; return 1; }
    }
    double td = ebq_rint_f64(x / g->step);
    if (fabs(td) < (double)EBQ_MAX_Q) {
        int32_t qi = (int32_t)td;
        double yy = (double)qi * g->step;
        if (ebq_check_f64(x, yy, g->eb)) { *q = qi; *y = yy; return 1; }
    }
    *q = 0;
    *y = x;
    return 0;
}

/* One element v (already src + residual): its index (0 for an outlier, which goes to the
 * sink) and, in *r, the new error-feedback residual v - y (0 for outliers, also non-finite). */
static inline int32_t ebq_quant1_f32(const ebq_grid *g, float v, uint64_t pos, ebq_sink *sink,
                                     float *r) {
    int32_t q;
    float y;
    if (!ebq_decide_f32(g, v, &q, &y)) {
        ebq_sink_push(sink, pos, &v);
        *r = 0.0f;
    } else {
        *r = v - y;
    }
    return q;
}
static inline int32_t ebq_quant1_f64(const ebq_grid *g, double v, uint64_t pos, ebq_sink *sink,
                                     double *r) {
    int32_t q;
    double y;
    if (!ebq_decide_f64(g, v, &q, &y)) {
        ebq_sink_push(sink, pos, &v);
        *r = 0.0;
    } else {
        *r = v - y;
    }
    return q;
}

static inline uint32_t ebq_zigzag(int32_t v) {
    return ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
}
static inline int32_t ebq_unzigzag(uint32_t z) {
    return (int32_t)((z >> 1) ^ (0u - (z & 1u)));
}
static inline unsigned ebq_width(uint32_t bits) {
    return bits ? 32u - (unsigned)__builtin_clz(bits) : 0u;
}

/* ---- kernels (generic in ebq_kernels.c, AVX2 in x86/ebq_avx2.c) ---- */
typedef struct {
    /* Quantize m <= EBQ_CHUNK elements starting at element i0 of src (and of residual when
     * not NULL: v = src + residual is quantized and residual = v - y written back; 0 for
     * outliers). Writes z[i] = zigzag of the (predicted) index, the OR of z over each block
     * of 32 to ors[], and the raw index to q[] when q is not NULL. *prev is the index
     * before i0 (DELTA) and receives the last one. Outliers go to sink. */
    void (*quantize)(const ebq_grid *g, const void *src, void *residual, size_t i0, size_t m,
                     int32_t *prev, uint32_t *z, uint32_t *ors, int32_t *q, ebq_sink *sink);
    /* Decode the fast block stream of n elements (widths and packed data validated; bytes
     * up to end may be read) into dst (dst += y when add). */
    void (*decode)(const ebq_grid *g, const uint8_t *widths, const uint8_t *packed,
                   const uint8_t *end, size_t n, void *dst, int add);
    /* Minimum and maximum of the finite values of src (+ residual); 0 when none is finite. */
    int (*minmax)(mpiucc_dtype t, const void *src, const void *residual, size_t n,
                  double *mn, double *mx);
    /* Indices q[0..32) of one fast block of width w at packed (bytes up to end readable),
     * the predictor undone from *prev, which receives q[31]. */
    void (*block_indices)(const uint8_t *packed, unsigned w, const uint8_t *end, int delta,
                          int32_t *prev, int32_t *q);
    /* z[0..32) of qa + qb with the predictor (from *prev, which receives the last sum);
     * returns the OR of z; *overflow = 1 when a sum leaves int32. */
    uint32_t (*sum_block)(const int32_t *qa, const int32_t *qb, int delta, int32_t *prev,
                          uint32_t *z, int *overflow);
    /* Decode m <= 32 zigzag values z (DELTA: from *prev, which receives the last index)
     * and write or add y to dst[0..m). */
    void (*dequant)(const ebq_grid *g, const uint32_t *z, size_t m, int32_t *prev, void *dst,
                    int add);
} ebq_kernels;

extern const ebq_kernels ebq_kernels_generic;
#if MPIUCC_X86
extern const ebq_kernels ebq_kernels_avx2;
#endif
const ebq_kernels *ebq_kernels_now(void);

/* Indices of a block of 32 zigzag values (DELTA: prefix from *prev, which gets q[31]). */
void ebq_z_to_indices(const uint32_t *z, int delta, int32_t *prev, int32_t *q);

/* Decode m <= 32 indices from zigzag values z (generic; the DELTA prefix uses *prev) and
 * write or add y to dst[0..m). */
void ebq_dequant_generic(const ebq_grid *g, const uint32_t *z, size_t m, int32_t *prev,
                         void *dst, int add);

/* ---- bit packing (ebq_pack.c) ---- */
/* Pack 32 values of width w (each < 2^w) into exactly 4*w bytes, value i at bits
 * [i*w, (i+1)*w) of the little-endian bit string. */
void ebq_pack32(const uint32_t *z, unsigned w, uint8_t *out);
/* The reverse: read exactly 4*w bytes. */
void ebq_unpack32(const uint8_t *in, unsigned w, uint32_t *z);

/* ---- payloads (ebq.c, ebq_dense.c) ---- */
/* Grid of params for the values src (+ residual): resolves REL, clamps eb. */
void ebq_make_grid(const mpiucc_params *p, const void *src, const void *residual, size_t n,
                   ebq_grid *g);
/* Grid from a validated header. */
void ebq_grid_from_header(const mpiucc_header *h, ebq_grid *g);
size_t ebq_nblocks(size_t n);

/* Validate k outlier records at rec..end (ascending positions < n, exactly filling it). */
mpiucc_status ebq_check_outliers(const uint8_t *rec, const uint8_t *end, uint64_t k,
                                 uint64_t n, size_t es);
/* Read one validated outlier record: *pos (the previous position + 1, 0 at first) becomes
 * its position; returns the next record. */
const uint8_t *ebq_read_outlier(const uint8_t *rec, uint64_t *pos, size_t es, void *value);
/* Move staged outliers to dst (their final place, below the staging area) in forward order;
 * returns the number of bytes. */
size_t ebq_sink_finish(ebq_sink *s, uint8_t *dst);
/* Validate width bytes: sum of 4*w (each w <= 32) and a zero padding of the last block. */
mpiucc_status ebq_check_stream(const uint8_t *widths, size_t nblocks, const uint8_t *packed,
                               uint64_t packed_size, size_t n);

/* Writes a payload block by block (either level); outliers go to its sink. */
typedef struct {
    uint8_t *out;    /* payload start */
    uint8_t *widths; /* fast: width bytes */
    uint8_t *start;  /* fast: packed data; dense: escapes */
    uint8_t *op;     /* end of what is written at start */
    uint8_t *sym;    /* dense: symbols (a scratch buffer) */
    uint8_t *end;    /* fast: the end of a block area of its own; NULL: the sink's low end */
    size_t n;        /* elements */
    size_t nb;       /* blocks written */
    int dense;
    unsigned threads; /* dense: threads for the rANS streams (0: the default) */
    uint64_t acc;     /* dense: extra bits not yet written (fewer than 8) */
    unsigned nbits;   /* dense: how many */
    ebq_sink sink;
} ebq_writer;
mpiucc_status ebq_writer_init(ebq_writer *w, int dense, size_t n, size_t es, uint8_t *out,
                              size_t capacity);
/* Append one block: z[0..32) (zero past the element count), orv = OR of z. 0: no room. */
int ebq_dense_put(ebq_writer *w, const uint32_t *z, uint32_t orv);
static inline int ebq_writer_put(ebq_writer *w, const uint32_t *z, uint32_t orv) {
    if (w->dense) return ebq_dense_put(w, z, orv);
    unsigned wd = ebq_width(orv);
    if ((size_t)((w->end ? w->end : w->sink.lo) - w->op) < 4u * wd) return 0;
    w->widths[w->nb++] = (uint8_t)wd;
    ebq_pack32(z, wd, w->op);
    w->op += 4u * wd;
    if (!w->end) w->sink.floor = w->op;
    return 1;
}
/* Finish the payload (sub-header, entropy stage, outliers); *size receives its size.
 * Frees the scratch buffer, as ebq_writer_free does on an error path. */
mpiucc_status ebq_writer_finish(ebq_writer *w, size_t *size);
void ebq_writer_free(ebq_writer *w);

/* Reads a validated payload block by block (either level). The dense level decodes its
 * symbols a chunk at a time into the reader itself: no heap (the reader is about 48 KiB). */
#define EBQ_DENSE_CHUNK 4096 /* symbols per chunk: a multiple of EBQ_BLOCK and RANS_LANES */
typedef struct {
    const uint8_t *widths, *packed; /* fast */
    const uint8_t *esc;             /* dense: next escape */
    const uint8_t *outliers, *end;  /* outlier records up to the payload's end */
    uint64_t n_outliers, packed_size;
    size_t n, b;                    /* elements, next block */
    int dense;
    size_t chunk_end;               /* dense: element after the last decoded symbol */
    int v2;                         /* dense: format v2 or later, one rANS stream per segment */
    int v3;                         /* dense: format v3, extra bits instead of escapes */
    uint64_t acc;                   /* dense v3: extra bits read and not yet used */
    unsigned nbits;                 /* dense v3: how many */
    const uint8_t *rans, *sizes;    /* dense v2: the streams, their sizes (u64 each) */
    const uint8_t *seg_at;          /* dense v2: the stream of the segment after the current */
    size_t seg;                     /* dense v2: that segment's index */
    const uint8_t *sym;             /* dense, one pass: every symbol (caller's scratch) */
    int parts;                      /* dense, one pass: parts the blocks may be read in */
    const uint8_t *esc_at[MPIUCC_MAX_THREADS]; /* dense, one pass: each part's first escape */
    uint8_t chunk[EBQ_DENSE_CHUNK]; /* dense: symbols from chunk_end - its length on */
    mpiucc_rans_decoder dec;        /* dense: the symbols' decoder */
} ebq_reader;
/* Validate the whole payload (nothing is read out of bounds later) and set up r. A dense
 * payload with scratch of at least count bytes is decoded once into it (v2: its segments on up
 * to threads threads); with less (or NULL) it is decoded twice, chunk by chunk (validation,
 * then the blocks). */
mpiucc_status ebq_reader_init(ebq_reader *r, const mpiucc_header *h, const uint8_t *payload,
                              uint8_t *scratch, size_t scratch_size, unsigned threads);
mpiucc_status ebq_dense_reader_init(ebq_reader *r, const mpiucc_header *h,
                                    const uint8_t *payload, uint8_t *scratch,
                                    size_t scratch_size, unsigned threads);
/* First element of part t of n elements cut into parts of whole kernel chunks (ebq_segs_bounds'
 * cut). */
size_t ebq_part_start(size_t n, int parts, int t);
/* Bytes of the dense sub-header of a frame version (v2: with its table of stream sizes). */
uint64_t ebq_dense_head(uint32_t version, uint64_t n);
/* z of the next block (32 values, zero past the element count). */
void ebq_dense_block(ebq_reader *r, uint32_t *z);
static inline void ebq_reader_block(ebq_reader *r, uint32_t *z) {
    if (r->dense) {
        ebq_dense_block(r, z);
    } else {
        unsigned w = r->widths[r->b];
        ebq_unpack32(r->packed, w, z);
        r->packed += 4u * w;
    }
    r->b++;
}

/* ---- the dense level (ebq_dense.c; needs entropy.h) ---- */
/* Payload bound (format v2) without the outlier records. */
size_t ebq_dense_payload_bound(size_t n, size_t es);
/* Entropy-code the symbols and write the sub-header (ebq_writer_finish's dense part). */
mpiucc_status ebq_dense_finish(ebq_writer *w);

#endif /* MPIUCC_EBQ_H */
