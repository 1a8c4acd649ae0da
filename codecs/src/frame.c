/* The frame layer: header layout, validation, and dispatch to the codecs. */
#include "internal.h"

static const uint8_t frame_magic[4] = {0x89, 'M', 'U', 'C'};

const char *mpiucc_status_string(mpiucc_status status) {
    switch (status) {
    case MPIUCC_OK: return "ok";
    case MPIUCC_ERR_ARG: return "invalid argument";
    case MPIUCC_ERR_CAPACITY: return "output buffer too small";
    case MPIUCC_ERR_TRUNCATED: return "frame truncated";
    case MPIUCC_ERR_MAGIC: return "not an mpiucc frame (bad magic)";
    case MPIUCC_ERR_VERSION: return "unsupported frame format version";
    case MPIUCC_ERR_HEADER_CHECKSUM: return "frame header checksum mismatch";
    case MPIUCC_ERR_PAYLOAD_CHECKSUM: return "frame payload checksum mismatch";
    case MPIUCC_ERR_CORRUPT: return "corrupt frame";
    case MPIUCC_ERR_UNSUPPORTED: return "unsupported codec, dtype or level";
    case MPIUCC_ERR_MISMATCH: return "frames do not match (codec, dtype, count or grid)";
    case MPIUCC_ERR_OVERFLOW: return "integer overflow in the sum of indices";
    case MPIUCC_ERR_NOMEM: return "out of memory";
    }
    return "unknown status";
}

size_t mpiucc_dtype_size(mpiucc_dtype dtype) {
    switch (dtype) {
    case MPIUCC_DTYPE_F32: return 4;
    case MPIUCC_DTYPE_F64: return 8;
    case MPIUCC_DTYPE_F16:
    case MPIUCC_DTYPE_BF16: return 2;
    }
    return 0;
}

static const mpiucc_codec_impl *codec_of(uint32_t codec) {
    return codec < MPIUCC_CODEC_COUNT_ ? mpiucc_codec_table[codec] : NULL;
}

static mpiucc_status check_params(const mpiucc_params *p, const mpiucc_codec_impl **impl) {
    if (!p || mpiucc_dtype_size((mpiucc_dtype)p->dtype) == 0 ||
        (p->flags & ~MPIUCC_FLAG_PAYLOAD_CHECKSUM))
        return MPIUCC_ERR_ARG;
    for (int i = 0; i < 6; i++)
        if (p->reserved[i]) return MPIUCC_ERR_ARG;
    if (p->codec >= MPIUCC_CODEC_COUNT_) return MPIUCC_ERR_ARG;
    *impl = codec_of(p->codec);
    if (!*impl) return MPIUCC_ERR_UNSUPPORTED;
    return (*impl)->check_params(p);
}

size_t mpiucc_compress_bound(const mpiucc_params *params, size_t count) {
    const mpiucc_codec_impl *impl;
    if (check_params(params, &impl) != MPIUCC_OK) return 0;
    size_t payload = impl->payload_bound(params, count);
    return payload ? MPIUCC_HEADER_SIZE + payload : 0;
}

void mpiucc_write_header(uint8_t *dst, const mpiucc_header *h) {
    memcpy(dst, frame_magic, 4);
    dst[4] = (uint8_t)h->version;
    dst[5] = (uint8_t)h->codec;
    dst[6] = (uint8_t)h->dtype;
    dst[7] = (uint8_t)h->flags;
    mpiucc_put_u64(dst + 8, h->count);
    mpiucc_put_f64(dst + 16, h->bound);
    mpiucc_put_f64(dst + 24, h->param);
    mpiucc_put_u64(dst + 32, h->payload_size);
    mpiucc_put_u32(dst + 40, h->block);
    mpiucc_put_u32(dst + 44, h->aux);
    mpiucc_put_u64(dst + 48, 0); /* reserved */
    mpiucc_put_u32(dst + 56, h->payload_checksum);
    mpiucc_put_u32(dst + 60, mpiucc_crc32c(0, dst, 60));
}

static mpiucc_status compress_frame(const mpiucc_params *params, const void *src,
                                    void *residual, size_t count, void *dst,
                                    size_t dst_capacity, size_t *dst_size) {
    const mpiucc_codec_impl *impl;
    mpiucc_status st = check_params(params, &impl);
    if (st != MPIUCC_OK) return st;
    if (!dst || !dst_size || (count && !src)) return MPIUCC_ERR_ARG;
    if (dst_capacity < MPIUCC_HEADER_SIZE) return MPIUCC_ERR_CAPACITY;
    uint8_t *out = (uint8_t *)dst;
    mpiucc_header h = {1, params->codec, params->dtype, /* ebq dense makes it 2 */
                       params->flags & MPIUCC_FLAG_PAYLOAD_CHECKSUM, count, 0, 0, 0, 0, 0, 0};
    size_t payload = 0;
    st = impl->encode(params, src, residual, count, out + MPIUCC_HEADER_SIZE,
                      dst_capacity - MPIUCC_HEADER_SIZE, &payload, &h);
    if (st != MPIUCC_OK) return st;
    h.payload_size = payload;
    if (h.flags & MPIUCC_FLAG_PAYLOAD_CHECKSUM)
        h.payload_checksum = mpiucc_crc32c(0, out + MPIUCC_HEADER_SIZE, payload);
    mpiucc_write_header(out, &h);
    *dst_size = MPIUCC_HEADER_SIZE + payload;
    return MPIUCC_OK;
}

mpiucc_status mpiucc_compress(const mpiucc_params *params, const void *src, size_t count,
                              void *dst, size_t dst_capacity, size_t *dst_size) {
    return compress_frame(params, src, NULL, count, dst, dst_capacity, dst_size);
}

mpiucc_status mpiucc_compress_ef(const mpiucc_params *params, const void *src,
                                 void *residual, size_t count, void *dst,
                                 size_t dst_capacity, size_t *dst_size) {
    if (count && !residual) return MPIUCC_ERR_ARG;
    return compress_frame(params, src, residual, count, dst, dst_capacity, dst_size);
}

mpiucc_status mpiucc_read_header(const void *src, size_t src_size, mpiucc_header *header) {
    if (!src || !header) return MPIUCC_ERR_ARG;
    const uint8_t *p = (const uint8_t *)src;
    if (src_size < 4) return src_size && memcmp(p, frame_magic, src_size) ? MPIUCC_ERR_MAGIC
                                                                          : MPIUCC_ERR_TRUNCATED;
    if (memcmp(p, frame_magic, 4)) return MPIUCC_ERR_MAGIC;
    if (src_size < MPIUCC_HEADER_SIZE) return MPIUCC_ERR_TRUNCATED;
    if (mpiucc_crc32c(0, p, 60) != mpiucc_get_u32(p + 60)) return MPIUCC_ERR_HEADER_CHECKSUM;
    mpiucc_header h;
    h.version = p[4];
    h.codec = p[5];
    h.dtype = p[6];
    h.flags = p[7];
    h.count = mpiucc_get_u64(p + 8);
    h.bound = mpiucc_get_f64(p + 16);
    h.param = mpiucc_get_f64(p + 24);
    h.payload_size = mpiucc_get_u64(p + 32);
    h.block = mpiucc_get_u32(p + 40);
    h.aux = mpiucc_get_u32(p + 44);
    h.payload_checksum = mpiucc_get_u32(p + 56);
    if (h.version < 1 || h.version > MPIUCC_FORMAT_VERSION) return MPIUCC_ERR_VERSION;
    if (mpiucc_get_u64(p + 48) != 0 || (h.flags & ~MPIUCC_FLAGS_KNOWN_) ||
        mpiucc_dtype_size((mpiucc_dtype)h.dtype) == 0 || h.count > (UINT64_MAX >> 4) ||
        isnan(h.bound) || h.bound < 0)
        return MPIUCC_ERR_CORRUPT;
    if (!(h.flags & MPIUCC_FLAG_PAYLOAD_CHECKSUM) && h.payload_checksum) return MPIUCC_ERR_CORRUPT;
    if ((h.flags & MPIUCC_FLAG_NONFINITE) && h.count == 0) return MPIUCC_ERR_CORRUPT;
    const mpiucc_codec_impl *impl = codec_of(h.codec);
    if (h.codec >= MPIUCC_CODEC_COUNT_) return MPIUCC_ERR_CORRUPT;
    if (!impl) return MPIUCC_ERR_UNSUPPORTED;
    if (h.version >= 2 && h.codec != MPIUCC_CODEC_EBQ) return MPIUCC_ERR_CORRUPT;
    if (h.payload_size > src_size - MPIUCC_HEADER_SIZE) return MPIUCC_ERR_TRUNCATED;
    mpiucc_status st = impl->check_header(&h);
    if (st != MPIUCC_OK) return st;
    *header = h;
    return MPIUCC_OK;
}

static mpiucc_status decompress_frame(const void *src, size_t src_size, void *dst,
                                      size_t dst_capacity, void *scratch, size_t scratch_size,
                                      size_t *count, int add, unsigned threads) {
    mpiucc_header h;
    mpiucc_status st = mpiucc_read_header(src, src_size, &h);
    if (st != MPIUCC_OK) return st;
    if (h.count > dst_capacity / mpiucc_dtype_size((mpiucc_dtype)h.dtype))
        return MPIUCC_ERR_CAPACITY;
    if (h.count && !dst) return MPIUCC_ERR_ARG;
    const uint8_t *payload = (const uint8_t *)src + MPIUCC_HEADER_SIZE;
    if ((h.flags & MPIUCC_FLAG_PAYLOAD_CHECKSUM) &&
        mpiucc_crc32c(0, payload, h.payload_size) != h.payload_checksum)
        return MPIUCC_ERR_PAYLOAD_CHECKSUM;
    const mpiucc_codec_impl *impl = codec_of(h.codec);
    if (h.codec == MPIUCC_CODEC_EBQ)
        st = ebq_decode_threads(&h, payload, dst, add, (uint8_t *)scratch,
                                scratch ? scratch_size : 0, threads);
    else
        st = impl->decode_scratch && scratch
                 ? impl->decode_scratch(&h, payload, dst, add, (uint8_t *)scratch, scratch_size)
                 : impl->decode(&h, payload, dst, add);
    if (st == MPIUCC_OK && count) *count = h.count;
    return st;
}

mpiucc_status mpiucc_decompress(const void *src, size_t src_size, void *dst,
                                size_t dst_capacity, size_t *count) {
    return decompress_frame(src, src_size, dst, dst_capacity, NULL, 0, count, 0, 0);
}

mpiucc_status mpiucc_decompress_add(const void *src, size_t src_size, void *dst,
                                    size_t dst_capacity, size_t *count) {
    return decompress_frame(src, src_size, dst, dst_capacity, NULL, 0, count, 1, 0);
}

size_t mpiucc_decompress_scratch_size(const mpiucc_header *header) {
    const mpiucc_codec_impl *impl = header ? codec_of(header->codec) : NULL;
    return impl && impl->scratch_size ? impl->scratch_size(header) : 0;
}

mpiucc_status mpiucc_decompress_scratch(const void *src, size_t src_size, void *dst,
                                        size_t dst_capacity, void *scratch,
                                        size_t scratch_size, int add, size_t *count) {
    if (add != 0 && add != 1) return MPIUCC_ERR_ARG;
    return decompress_frame(src, src_size, dst, dst_capacity, scratch, scratch_size, count,
                            add, 0);
}

mpiucc_status mpiucc_decompress_threads(const void *src, size_t src_size, void *dst,
                                        size_t dst_capacity, void *scratch, size_t scratch_size,
                                        int add, unsigned threads, size_t *count) {
    if (add != 0 && add != 1) return MPIUCC_ERR_ARG;
    return decompress_frame(src, src_size, dst, dst_capacity, scratch, scratch_size, count,
                            add, threads);
}
