/* Fuzz target: arbitrary bytes decoded as ebq dense-level frames (escapes, the rANS stage, outliers).
 * The input is tried as it is and with its codec and level forced and checksums fixed. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_decode_both(data, size, MPIUCC_CODEC_EBQ, MPIUCC_LEVEL_DENSE);
    return 0;
}
