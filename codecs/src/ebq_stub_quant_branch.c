/* Temporary stub for the quant branch (ebq lives on another branch). */
#include "internal.h"
const mpiucc_codec_impl mpiucc_ebq_impl = {0};
