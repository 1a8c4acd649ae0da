/* Fuzz target: the frame-header reader and validator (mpiucc_read_header). Any bytes, as they
 * are and with the header checksum fixed; an accepted header must match its bytes and the
 * rules of FORMAT.md, and a header is never accepted from fewer bytes than the frame. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_header(const uint8_t *f, size_t size) {
    mpiucc_header h;
    memset(&h, FZ_SENTINEL, sizeof h);
    mpiucc_status st = mpiucc_read_header(f, size, &h);
    FZ_ASSERT(st <= MPIUCC_ERR_NOMEM);
    FZ_ASSERT(mpiucc_status_string(st) != NULL);
    if (st != MPIUCC_OK) {
        FZ_ASSERT(fz_untouched((const uint8_t *)&h, sizeof h)); /* nothing filled on failure */
        return;
    }
    FZ_ASSERT(size >= MPIUCC_HEADER_SIZE && f[0] == 0x89 && f[1] == 'M' && f[2] == 'U');
    FZ_ASSERT(mpiucc_crc32c(0, f, 60) == fz_u32(f + 60));
    FZ_ASSERT(h.version >= 1 && h.version <= 3 && h.version == f[4]);
    FZ_ASSERT(h.codec == f[5] && h.dtype == f[6]);
    FZ_ASSERT(h.flags == f[7] && (h.flags & ~MPIUCC_FLAGS_KNOWN_) == 0);
    FZ_ASSERT(h.codec < MPIUCC_CODEC_COUNT_ && mpiucc_dtype_size((mpiucc_dtype)h.dtype));
    FZ_ASSERT(h.count == fz_u64(f + 8) && h.count < ((uint64_t)1 << 60));
    double bound;
    uint64_t bits = fz_u64(f + 16);
    memcpy(&bound, &bits, 8);
    FZ_ASSERT(!memcmp(&bound, &h.bound, 8) && h.bound >= 0);
    FZ_ASSERT(h.payload_size == fz_u64(f + 32) && h.payload_size <= size - MPIUCC_HEADER_SIZE);
    FZ_ASSERT(h.block == fz_u32(f + 40) && h.aux == fz_u32(f + 44) && fz_u64(f + 48) == 0);
    FZ_ASSERT(h.payload_checksum == fz_u32(f + 56));
    if (!(h.flags & MPIUCC_FLAG_PAYLOAD_CHECKSUM)) FZ_ASSERT(h.payload_checksum == 0);
    /* one byte short of the payload is a truncated frame */
    if (h.payload_size) {
        mpiucc_header h2;
        size_t need = MPIUCC_HEADER_SIZE + (size_t)h.payload_size;
        FZ_ASSERT(mpiucc_read_header(f, need, &h2) == MPIUCC_OK);
        FZ_ASSERT(mpiucc_read_header(f, need - 1, &h2) == MPIUCC_ERR_TRUNCATED);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *f = (uint8_t *)calloc(1, size ? size : 1);
    FZ_ASSERT(f);
    if (size) memcpy(f, data, size);
    check_header(f, size);
    if (size >= 60) { /* magic forced, checksum fixed: the field checks */
        memcpy(f, "\x89MUC", 4);
        if (size >= MPIUCC_HEADER_SIZE) fz_fix_checksums(f, size);
        check_header(f, size);
    }
    free(f);
    return 0;
}
