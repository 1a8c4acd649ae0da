/* Fuzz target: arbitrary bytes decoded as topk frames (positions and values).
 * The input is tried as it is and with its codec forced and checksums fixed. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_decode_both(data, size, MPIUCC_CODEC_TOPK, -1);
    return 0;
}
