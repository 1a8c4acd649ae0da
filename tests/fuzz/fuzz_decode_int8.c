/* Fuzz target: arbitrary bytes decoded as int8 frames (blockwise absmax).
 * The input is tried as it is and with its codec forced and checksums fixed. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_decode_both(data, size, MPIUCC_CODEC_INT8, -1);
    return 0;
}
