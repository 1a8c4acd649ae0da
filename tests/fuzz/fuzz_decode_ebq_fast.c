/* Fuzz target: arbitrary bytes decoded as ebq fast-level frames (width bytes, packed blocks, outliers).
 * The input is tried as it is and with its codec and level forced and checksums fixed. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_decode_both(data, size, MPIUCC_CODEC_EBQ, MPIUCC_LEVEL_FAST);
    return 0;
}
