/* The codec table: one entry per mpiucc_codec. */
#include "internal.h"

const mpiucc_codec_impl *const mpiucc_codec_table[MPIUCC_CODEC_COUNT_] = {
    [MPIUCC_CODEC_RAW] = &mpiucc_raw_impl,
    [MPIUCC_CODEC_EBQ] = &mpiucc_ebq_impl,
};
