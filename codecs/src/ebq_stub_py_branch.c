/* TEMPORARY (branch py only): ebq is written on another branch. This stub lets the library
 * link and reports ebq as unsupported; it is deleted before the branch is merged. */
#include "internal.h"

static size_t stub_payload_bound(const mpiucc_params *p, size_t n) {
    (void)p; (void)n;
    return 0;
}
static mpiucc_status stub_check_params(const mpiucc_params *p) {
    (void)p;
    return MPIUCC_ERR_UNSUPPORTED;
}
static mpiucc_status stub_encode(const mpiucc_params *p, const void *src, void *residual,
                                 size_t n, uint8_t *out, size_t capacity, size_t *size,
                                 mpiucc_header *h) {
    (void)p; (void)src; (void)residual; (void)n; (void)out; (void)capacity; (void)size; (void)h;
    return MPIUCC_ERR_UNSUPPORTED;
}
static mpiucc_status stub_check_header(const mpiucc_header *h) {
    (void)h;
    return MPIUCC_ERR_UNSUPPORTED;
}
static mpiucc_status stub_decode(const mpiucc_header *h, const uint8_t *payload, void *dst,
                                 int add) {
    (void)h; (void)payload; (void)dst; (void)add;
    return MPIUCC_ERR_UNSUPPORTED;
}
const mpiucc_codec_impl mpiucc_ebq_impl = {stub_payload_bound, stub_check_params, stub_encode,
                                           stub_check_header, stub_decode};

mpiucc_status mpiucc_ebq_quantize(const mpiucc_params *params, const void *src, size_t count,
                                  int32_t *indices, uint64_t *outlier_pos,
                                  size_t outlier_capacity, size_t *n_outliers) {
    (void)params; (void)src; (void)count; (void)indices; (void)outlier_pos;
    (void)outlier_capacity; (void)n_outliers;
    return MPIUCC_ERR_UNSUPPORTED;
}
size_t mpiucc_pack_bound(size_t count) {
    (void)count;
    return 0;
}
mpiucc_status mpiucc_pack_indices(const int32_t *indices, size_t count, void *dst,
                                  size_t dst_capacity, size_t *dst_size) {
    (void)indices; (void)count; (void)dst; (void)dst_capacity; (void)dst_size;
    return MPIUCC_ERR_UNSUPPORTED;
}
mpiucc_status mpiucc_unpack_indices(const void *src, size_t src_size, int32_t *indices,
                                    size_t count, size_t *src_used) {
    (void)src; (void)src_size; (void)indices; (void)count; (void)src_used;
    return MPIUCC_ERR_UNSUPPORTED;
}
size_t mpiucc_ebq_add_bound(const void *a, size_t a_size, const void *b, size_t b_size) {
    (void)a; (void)a_size; (void)b; (void)b_size;
    return 0;
}
mpiucc_status mpiucc_ebq_add(const void *a, size_t a_size, const void *b, size_t b_size,
                             void *dst, size_t dst_capacity, size_t *dst_size) {
    (void)a; (void)a_size; (void)b; (void)b_size; (void)dst; (void)dst_capacity; (void)dst_size;
    return MPIUCC_ERR_UNSUPPORTED;
}
