/* ebq_pack.c: bit packing of blocks of 32 indices, one unrolled routine per width, and the
 * public block-stream API (mpiucc_pack_indices / mpiucc_unpack_indices). */
#include "ebq.h"

static inline void store_le32(uint8_t *p, uint32_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 4);
#else
    mpiucc_put_u32(p, v);
#endif
}
static inline uint32_t load_le32(const uint8_t *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
#else
    return mpiucc_get_u32(p);
#endif
}

/* With w a constant the loops unroll fully and every shift and branch is resolved at
 * compile time: 32 shift-ors and w word stores per block. */
static inline __attribute__((always_inline)) void pack_w(const uint32_t *z, uint8_t *out,
                                                         const unsigned w) {
    uint64_t acc = 0;
    unsigned bits = 0;
#pragma GCC unroll 32
    for (unsigned i = 0; i < 32; i++) {
        acc |= (uint64_t)z[i] << bits;
        bits += w;
        if (bits >= 32) {
            store_le32(out, (uint32_t)acc);
            out += 4;
            acc >>= 32;
            bits -= 32;
        }
    }
}

static inline __attribute__((always_inline)) void unpack_w(const uint8_t *in, uint32_t *z,
                                                           const unsigned w) {
    const uint64_t mask = (w == 32) ? 0xffffffffu : ((uint64_t)1 << w) - 1;
    uint64_t acc = 0;
    unsigned bits = 0;
#pragma GCC unroll 32
    for (unsigned i = 0; i < 32; i++) {
        if (bits < w) {
            acc |= (uint64_t)load_le32(in) << bits;
            in += 4;
            bits += 32;
        }
        z[i] = (uint32_t)(acc & mask);
        acc >>= w;
        bits -= w;
    }
}

#define EBQ_W(X) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) \
    X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28)     \
    X(29) X(30) X(31) X(32)

#define DEF_PACK(W) \
    static void pack_##W(const uint32_t *z, uint8_t *o) { pack_w(z, o, W); } \
    static void unpack_##W(const uint8_t *i, uint32_t *z) { unpack_w(i, z, W); }
EBQ_W(DEF_PACK)

static void unpack_0(const uint8_t *i, uint32_t *z) {
    (void)i;
    memset(z, 0, 32 * sizeof *z);
}

typedef void (*pack_fn)(const uint32_t *, uint8_t *);
typedef void (*unpack_fn)(const uint8_t *, uint32_t *);
#define REF_PACK(W) pack_##W,
#define REF_UNPACK(W) unpack_##W,
static const pack_fn pack_table[33] = {NULL, EBQ_W(REF_PACK)};
static const unpack_fn unpack_table[33] = {unpack_0, EBQ_W(REF_UNPACK)};

void ebq_pack32(const uint32_t *z, unsigned w, uint8_t *out) {
    if (w) pack_table[w](z, out);
}

void ebq_unpack32(const uint8_t *in, unsigned w, uint32_t *z) { unpack_table[w](in, z); }

mpiucc_status ebq_check_stream(const uint8_t *widths, size_t nblocks, const uint8_t *packed,
                               uint64_t packed_size, size_t n) {
    uint64_t sum = 0;
    unsigned bad = 0;
    for (size_t b = 0; b < nblocks; b++) {
        bad |= widths[b] > 32;
        sum += 4u * (uint64_t)widths[b];
    }
    if (bad || sum != packed_size) return MPIUCC_ERR_CORRUPT;
    size_t tail = n % EBQ_BLOCK;
    if (tail && widths[nblocks - 1]) { /* the padding of the last block must be zero */
        uint32_t z[32];
        unsigned w = widths[nblocks - 1];
        ebq_unpack32(packed + packed_size - 4u * w, w, z);
        for (size_t i = tail; i < 32; i++)
            if (z[i]) return MPIUCC_ERR_CORRUPT;
    }
    return MPIUCC_OK;
}

size_t mpiucc_pack_bound(size_t count) {
    size_t nb = count / EBQ_BLOCK + (count % EBQ_BLOCK != 0);
    return nb > SIZE_MAX / 129 ? 0 : nb * 129 + (count == 0); /* never 0 for a valid count */
}

mpiucc_status mpiucc_pack_indices(const int32_t *indices, size_t count, void *dst,
                                  size_t dst_capacity, size_t *dst_size) {
    if ((count && (!indices || !dst)) || !dst_size) return MPIUCC_ERR_ARG;
    size_t nb = count / EBQ_BLOCK + (count % EBQ_BLOCK != 0);
    if (dst_capacity < nb) return MPIUCC_ERR_CAPACITY;
    uint8_t *widths = (uint8_t *)dst, *op = widths + nb, *end = widths + dst_capacity;
    for (size_t b = 0; b < nb; b++) {
        uint32_t z[32], orv = 0;
        size_t m = count - b * EBQ_BLOCK < EBQ_BLOCK ? count - b * EBQ_BLOCK : EBQ_BLOCK;
        for (size_t i = 0; i < m; i++) orv |= z[i] = ebq_zigzag(indices[b * EBQ_BLOCK + i]);
        for (size_t i = m; i < EBQ_BLOCK; i++) z[i] = 0;
        unsigned w = ebq_width(orv);
        if ((size_t)(end - op) < 4u * w) return MPIUCC_ERR_CAPACITY;
        widths[b] = (uint8_t)w;
        ebq_pack32(z, w, op);
        op += 4u * w;
    }
    *dst_size = (size_t)(op - widths);
    return MPIUCC_OK;
}

mpiucc_status mpiucc_unpack_indices(const void *src, size_t src_size, int32_t *indices,
                                    size_t count, size_t *src_used) {
    if ((count && (!src || !indices)) || !src_used) return MPIUCC_ERR_ARG;
    size_t nb = count / EBQ_BLOCK + (count % EBQ_BLOCK != 0);
    if (src_size < nb) return MPIUCC_ERR_TRUNCATED;
    const uint8_t *widths = (const uint8_t *)src, *packed = widths + nb;
    uint64_t sum = 0;
    for (size_t b = 0; b < nb; b++) {
        if (widths[b] > 32) return MPIUCC_ERR_CORRUPT;
        sum += 4u * (uint64_t)widths[b];
    }
    if (sum > src_size - nb) return MPIUCC_ERR_TRUNCATED;
    mpiucc_status st = ebq_check_stream(widths, nb, packed, sum, count);
    if (st != MPIUCC_OK) return st;
    for (size_t b = 0; b < nb; b++) {
        uint32_t z[32];
        size_t m = count - b * EBQ_BLOCK < EBQ_BLOCK ? count - b * EBQ_BLOCK : EBQ_BLOCK;
        ebq_unpack32(packed, widths[b], z);
        packed += 4u * widths[b];
        for (size_t i = 0; i < m; i++) indices[b * EBQ_BLOCK + i] = ebq_unzigzag(z[i]);
    }
    *src_used = nb + (size_t)sum;
    return MPIUCC_OK;
}
