/* Fuzz target: mpiucc_unpack_indices on arbitrary bytes (the fast-level block stream of the
 * integer-domain API). The first two bytes give the count; what unpacks must pack back to the
 * same bytes, and the indices array is never written past count. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    size_t count = (size_t)(data[0] | data[1] << 8), used = 0;
    data += 2;
    size -= 2;
    uint8_t *src = (uint8_t *)malloc(size ? size : 1);
    int32_t *q = (int32_t *)malloc((count ? count : 1) * sizeof(int32_t));
    FZ_ASSERT(src && q);
    if (size) memcpy(src, data, size);
    mpiucc_status st = mpiucc_unpack_indices(src, size, q, count, &used);
    FZ_ASSERT(st <= MPIUCC_ERR_NOMEM);
    if (st == MPIUCC_OK) {
        FZ_ASSERT(used <= size);
        size_t cap = mpiucc_pack_bound(count), packed = 0;
        uint8_t *re = (uint8_t *)malloc(cap ? cap : 1);
        FZ_ASSERT(re);
        st = mpiucc_pack_indices(q, count, re, cap, &packed);
        FZ_ASSERT(st == MPIUCC_OK); /* the bound always suffices */
        /* input widths may be wider than needed (up to 32), so compare the values only */
        {
            int32_t *q2 = (int32_t *)malloc((count ? count : 1) * sizeof(int32_t));
            size_t used2 = 0;
            FZ_ASSERT(q2);
            FZ_ASSERT(mpiucc_unpack_indices(re, packed, q2, count, &used2) == MPIUCC_OK);
            FZ_ASSERT(used2 == packed && !memcmp(q, q2, count * sizeof(int32_t)));
            free(q2);
        }
        free(re);
    }
    free(src);
    free(q);
    return 0;
}
