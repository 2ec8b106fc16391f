// Dispatch entry points of the per-target matmul kernels (matmul-inl.h).
// Internal to ops/.
#pragma once

#include <cstdint>

#include "ops/matmul_internal.h"

namespace ladder::ops::detail {

// F32/F16/BF16 weights: y for columns [o_begin, o_end) of every row.
void matmul_float_cols(const MatmulTask& t, int64_t o_begin, int64_t o_end);
// Q8_0/Q4_0/Q4_K/Q6_K weights against quantized activations (t.xq/xd/xsum).
void matmul_int_cols(const MatmulTask& t, int64_t o_begin, int64_t o_end);
// Whether the current target has the integer kernels (x86 targets do; the
// portable fallback dequantizes rows into the float kernels instead).
bool has_int_kernels();

}  // namespace ladder::ops::detail
