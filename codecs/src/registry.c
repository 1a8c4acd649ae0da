/* The codec table: one entry per mpiucc_codec. */
#include "internal.h"

const mpiucc_codec_impl *const mpiucc_codec_table[MPIUCC_CODEC_COUNT_] = {
    [MPIUCC_CODEC_RAW] = &mpiucc_raw_impl,
    [MPIUCC_CODEC_EBQ] = &mpiucc_ebq_impl,
    [MPIUCC_CODEC_FP16] = &mpiucc_fp16_impl,
    [MPIUCC_CODEC_BF16] = &mpiucc_bf16_impl,
    [MPIUCC_CODEC_INT8] = &mpiucc_int8_impl,
    [MPIUCC_CODEC_INT4] = &mpiucc_int4_impl,
    [MPIUCC_CODEC_SIGN] = &mpiucc_sign_impl,
    [MPIUCC_CODEC_QSGD] = &mpiucc_qsgd_impl,
    [MPIUCC_CODEC_TOPK] = &mpiucc_topk_impl,
};
