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

// Packed weights (ops/packed_weights.h, layouts in matmul_packed-inl.h),
// AVX3_DL only, for Q8_0 and Q4_0: per group of 16 output columns, units of
// kPackedUnitBytes holding one 32-element block of Q8_0 or two of Q4_0.
inline constexpr size_t kPackedUnitBytes = 576;

inline int64_t packed_blocks_per_unit(TensorType type) {
  return type == TensorType::kQ4_0 ? 2 : 1;
}
// Size of a packed n_out x n_in matrix (n_in a multiple of 32).
inline size_t packed_bytes(TensorType type, int64_t n_in, int64_t n_out) {
  const int64_t per_unit = packed_blocks_per_unit(type);
  const int64_t units = (n_in / 32 + per_unit - 1) / per_unit;
  return static_cast<size_t>((n_out + 15) / 16 * units) * kPackedUnitBytes;
}

// Whether the current target has a packed kernel for `type`.
bool has_packed(TensorType type);
// Packs groups [g_begin, g_end) of 16 columns of t.w (type t.type); t.y_stride
// carries n_out.
void pack_groups(const MatmulTask& t, int64_t g_begin, int64_t g_end, uint8_t* out);
// y for columns [o_begin, o_end) of every row from packed weights of type
// t.type. Q4_0 also reads xq_sums: [rows][n_in / kActBlock] sum of t.xq per
// block (Q8_0 ignores it).
void matmul_packed_cols(const MatmulTask& t, const uint8_t* packed, const int32_t* xq_sums, int64_t o_begin,
                        int64_t o_end);

}  // namespace ladder::ops::detail
