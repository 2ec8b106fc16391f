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
// quantize_activations() with vectors (bit-identical).
void quantize_activations_simd(const float* x, int64_t rows, int64_t n_in, int8_t* xq, uint8_t* xu, float* xd,
                               float* xsum);
// The Highway target dispatch uses now (cheap: no CPUID, which traps in a VM).
int64_t dispatched_target();

// Packed Q8_0 (ops/packed_weights.h), AVX3_DL only: 576 bytes per 16 columns
// x 32 elements. t.y_stride carries n_out when packing.
inline constexpr size_t kPackedQ8_0BlockBytes = 576;
bool has_packed_q8_0();
void pack_q8_0_groups(const MatmulTask& t, int64_t g_begin, int64_t g_end, uint8_t* out);
void matmul_packed_q8_0_cols(const MatmulTask& t, const uint8_t* packed, int64_t o_begin, int64_t o_end);

}  // namespace ladder::ops::detail
