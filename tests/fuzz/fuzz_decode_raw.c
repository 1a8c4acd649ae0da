/* Fuzz target: arbitrary bytes decoded as raw frames (lossless copy).
 * The input is tried as it is and with its codec forced and checksums fixed. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_decode_both(data, size, MPIUCC_CODEC_RAW, -1);
    return 0;
}
