# Declarations of the C API (codecs/include/mpiucc.h) for Cython.
from libc.stdint cimport int32_t, uint32_t, uint64_t


cdef extern from "mpiucc.h" nogil:
    int MPIUCC_HEADER_SIZE
    int MPIUCC_FORMAT_VERSION
    unsigned int MPIUCC_FLAG_PAYLOAD_CHECKSUM
    unsigned int MPIUCC_FLAG_NONFINITE

    ctypedef enum mpiucc_status:
        MPIUCC_OK
        MPIUCC_ERR_ARG
        MPIUCC_ERR_CAPACITY
        MPIUCC_ERR_TRUNCATED
        MPIUCC_ERR_MAGIC
        MPIUCC_ERR_VERSION
        MPIUCC_ERR_HEADER_CHECKSUM
        MPIUCC_ERR_PAYLOAD_CHECKSUM
        MPIUCC_ERR_CORRUPT
        MPIUCC_ERR_UNSUPPORTED
        MPIUCC_ERR_MISMATCH
        MPIUCC_ERR_OVERFLOW
        MPIUCC_ERR_NOMEM

    ctypedef enum mpiucc_simd:
        MPIUCC_SIMD_GENERIC
        MPIUCC_SIMD_AVX2

    ctypedef enum mpiucc_dtype:
        pass

    ctypedef struct mpiucc_params:
        uint32_t codec
        uint32_t dtype
        double error_bound
        uint32_t mode
        uint32_t level
        uint32_t predictor
        uint32_t block_size
        uint32_t levels
        uint32_t rounding
        uint64_t seed
        uint32_t flags
        uint32_t threads
        uint32_t reserved[6]

    ctypedef struct mpiucc_header:
        uint32_t version
        uint32_t codec
        uint32_t dtype
        uint32_t flags
        uint64_t count
        double bound
        double param
        uint64_t payload_size
        uint32_t block
        uint32_t aux
        uint32_t payload_checksum

    ctypedef struct mpiucc_stats:
        double min
        double max
        double sum_squares
        uint64_t nonfinite

    const char *mpiucc_status_string(mpiucc_status status)
    size_t mpiucc_dtype_size(mpiucc_dtype dtype)

    size_t mpiucc_compress_bound(const mpiucc_params *params, size_t count)
    mpiucc_status mpiucc_compress(const mpiucc_params *params, const void *src, size_t count,
                                  void *dst, size_t dst_capacity, size_t *dst_size)
    mpiucc_status mpiucc_compress_ef(const mpiucc_params *params, const void *src,
                                     void *residual, size_t count, void *dst,
                                     size_t dst_capacity, size_t *dst_size)
    mpiucc_status mpiucc_read_header(const void *src, size_t src_size, mpiucc_header *header)
    mpiucc_status mpiucc_decompress(const void *src, size_t src_size, void *dst,
                                    size_t dst_capacity, size_t *count)
    mpiucc_status mpiucc_decompress_add(const void *src, size_t src_size, void *dst,
                                        size_t dst_capacity, size_t *count)
    size_t mpiucc_decompress_scratch_size(const mpiucc_header *header)
    mpiucc_status mpiucc_decompress_threads(const void *src, size_t src_size, void *dst,
                                            size_t dst_capacity, void *scratch,
                                            size_t scratch_size, int add, unsigned threads,
                                            size_t *count)
    unsigned mpiucc_default_threads()
    mpiucc_status mpiucc_ebq_add_threads(const void *a, size_t a_size, const void *b,
                                         size_t b_size, void *dst, size_t dst_capacity,
                                         unsigned threads, size_t *dst_size)
    mpiucc_status mpiucc_decompress_scratch(const void *src, size_t src_size, void *dst,
                                            size_t dst_capacity, void *scratch,
                                            size_t scratch_size, int add, size_t *count)

    mpiucc_status mpiucc_ebq_quantize(const mpiucc_params *params, const void *src, size_t count,
                                      int32_t *indices, uint64_t *outlier_pos,
                                      size_t outlier_capacity, size_t *n_outliers)
    size_t mpiucc_pack_bound(size_t count)
    mpiucc_status mpiucc_pack_indices(const int32_t *indices, size_t count, void *dst,
                                      size_t dst_capacity, size_t *dst_size)
    mpiucc_status mpiucc_unpack_indices(const void *src, size_t src_size, int32_t *indices,
                                        size_t count, size_t *src_used)
    size_t mpiucc_ebq_add_bound(const void *a, size_t a_size, const void *b, size_t b_size)
    mpiucc_status mpiucc_ebq_add(const void *a, size_t a_size, const void *b, size_t b_size,
                                 void *dst, size_t dst_capacity, size_t *dst_size)

    mpiucc_status mpiucc_finite_stats(const void *src, size_t count, mpiucc_dtype dtype,
                                      double scale, mpiucc_stats *stats)

    mpiucc_simd mpiucc_simd_level()
    mpiucc_simd mpiucc_set_simd_level(mpiucc_simd level)
    const char *mpiucc_simd_name(mpiucc_simd level)
    uint32_t mpiucc_crc32c(uint32_t crc, const void *data, size_t size)


cdef class Params:
    cdef mpiucc_params c
