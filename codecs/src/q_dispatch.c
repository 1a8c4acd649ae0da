/* q_dispatch.c: the quantizers' kernel tables and the run-time choice between them. */
#include "q_common.h"

const q_kernels q_kernels_generic = {
    q_half_encode_generic, q_half_decode_generic, q_int_encode_generic, q_int_decode_generic,
    q_sign_encode_generic, q_sign_decode_generic, q_qsgd_encode_generic, q_qsgd_decode_generic,
};

const q_kernels *q_kernels_for(mpiucc_dtype t) {
#if MPIUCC_X86
    if (t == MPIUCC_DTYPE_F32 && mpiucc_simd_now() == MPIUCC_SIMD_AVX2) return &q_kernels_avx2;
#else
    (void)t;
#endif
    return &q_kernels_generic;
}
