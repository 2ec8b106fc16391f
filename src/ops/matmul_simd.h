// Dispatch entry points of the per-target matmul kernels (matmul-inl.h).
// Internal to ops/.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/matmul_internal.h"

namespace ladder::ops::detail {

// F32/F16/BF16 weights: y for columns [o_begin, o_end) of every row.
void matmul_float_cols(const MatmulTask& t, int64_t o_begin, int64_t o_end);
// Float weights packed for decode (matmul-inl.h, PackFloatGroups): per group
// of the target's float tile width (4 columns on AVX-512, 2 on AVX2), per
// chunk of one vector of F32 lanes, the group's chunks in a row. x86 vector
// targets only; results are the same bits as matmul_float_cols().
bool has_float_packed();
size_t float_packed_bytes(TensorType type, int64_t n_in, int64_t n_out);
// Groups [g_begin, g_end) of t.w (t.y_stride carries n_out) into the packed matrix `out`.
void pack_float_groups(const MatmulTask& t, int64_t g_begin, int64_t g_end, uint8_t* out);
int64_t float_pack_group_cols();
void matmul_float_packed_cols(const MatmulTask& t, const uint8_t* packed, int64_t o_begin, int64_t o_end);
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
// AVX3_DL only: per group of 16 output columns, a run of units, each holding
// the 16 columns' weights for packed_unit_elems() elements of a row:
//   Q8_0 1088 bytes per two 32-element blocks
//   Q4_0  576 bytes per two blocks
//   Q4_K 2368 bytes per 256-element super-block
//   Q5_K 2880 bytes per super-block
//   Q6_K 3392 bytes per super-block
constexpr int64_t packed_unit_elems(TensorType type) {
  switch (type) {
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K: return kQK_K;
    default: return 64;  // Q8_0, Q4_0
  }
}
constexpr size_t packed_unit_bytes(TensorType type) {
  switch (type) {
    case TensorType::kQ4_K: return 2368;
    case TensorType::kQ5_K: return 2880;
    case TensorType::kQ6_K: return 3392;
    case TensorType::kQ8_0: return 1088;
    default: return 576;  // Q4_0
  }
}
// Size of a packed n_out x n_in matrix (n_in a whole number of blocks of the
// type; Q8_0 and Q4_0 pad an odd last block).
constexpr size_t packed_bytes(TensorType type, int64_t n_in, int64_t n_out) {
  const int64_t per_unit = packed_unit_elems(type);
  const int64_t units = (n_in + per_unit - 1) / per_unit;
  return static_cast<size_t>((n_out + 15) / 16 * units) * packed_unit_bytes(type);
}
// Elements per activation sum sum(xq) that the packed kernel of `type` reads
// (the offset of its unsigned weights): Q8_0 and Q4_0 32, Q6_K 16, others
// none (0).
constexpr int64_t packed_sum_group(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0:
    case TensorType::kQ4_0: return 32;
    case TensorType::kQ6_K: return 16;
    default: return 0;
  }
}

// Whether the current target has a packed kernel for `type`.
bool has_packed(TensorType type);
// Packs groups [g_begin, g_end) of 16 columns of t.w (type t.type); t.y_stride
// carries n_out.
void pack_groups(const MatmulTask& t, int64_t g_begin, int64_t g_end, uint8_t* out);
// y for columns [o_begin, o_end) of every row from packed weights of type
// t.type. Q8_0, Q4_0 and Q6_K also read xq_sums: [rows][n_in / g] sum of t.xq per
// g = packed_sum_group(t.type) elements (null for the other types).
void matmul_packed_cols(const MatmulTask& t, const uint8_t* packed, const int32_t* xq_sums, int64_t o_begin,
                        int64_t o_end);

// AMX-INT8 tiles (matmul_amx-inl.h; AVX3_DL only, and only where
// amx_int8_active()): rows [0, 16 * row_tiles) of the columns, from packed
// weights, bit-identical to matmul_packed_cols().
inline constexpr int64_t kAmxTileRows = 16;
bool has_amx_kernels();
// Quantized activations regrouped for the tiles, row tiles [rt_begin,
// rt_end): xq [rows][n_in] to MatmulTask::xq_tiles, xd and xsum [rows][n_in
// / 32] to xd_tiles and xsum_tiles.
struct ActTiles {
  int8_t* xq;
  float* xd;
  float* xsum;
};
void tile_activations(const int8_t* xq, const float* xd, const float* xsum, int64_t n_in, int64_t rt_begin,
                      int64_t rt_end, const ActTiles& out);
void matmul_amx_cols(const MatmulTask& t, const uint8_t* packed, int64_t o_begin, int64_t o_end,
                     int64_t row_tiles);

// AMX-BF16 tiles for F16/BF16 weights (matmul_amx_bf16-inl.h; AVX3_DL only,
// and only where amx_bf16_active()): the packed layout is 1 KiB per 16
// columns x 32 elements (n_in padded to 32), the activations bf16 hi and lo
// parts padded to 32 elements a row and 16 rows.
inline constexpr int64_t kBf16StepElems = 32;
constexpr size_t bf16_packed_bytes(int64_t n_in, int64_t n_out) {
  return static_cast<size_t>((n_out + 15) / 16 * ((n_in + kBf16StepElems - 1) / kBf16StepElems)) * 1024;
}
// Row stride of the bf16 activation parts, in elements: n_in padded to 32,
// plus 32 when that is an even number of 64-byte lines, so the 16 rows a
// tile loads fall in 16 different L1 sets (a stride of a multiple of 4 KiB
// would put them all in one).
constexpr int64_t bf16_act_stride(int64_t n_in) {
  const int64_t padded = (n_in + kBf16StepElems - 1) / kBf16StepElems * kBf16StepElems;
  return padded / kBf16StepElems % 2 == 0 ? padded + kBf16StepElems : padded;
}
bool has_amx_bf16_kernels();
void pack_bf16_groups(const MatmulTask& t, int64_t g_begin, int64_t g_end, uint8_t* out);
// x [rows][n_in] as hi and lo parts, [rows][bf16_act_stride(n_in)] each
// (zeros after n_in).
void split_activations_bf16(const float* x, int64_t rows, int64_t n_in, uint16_t* hi, uint16_t* lo);
void matmul_amx_bf16_cols(const MatmulTask& t, const uint8_t* packed, const uint16_t* xh, const uint16_t* xl,
                          int64_t o_begin, int64_t o_end);

// AVX512-BF16 dot products for BF16 weights (matmul_bf16_dot-inl.h; AVX3_DL
// only, and only where bf16_dot_active()): the same packed layout and
// activation parts as the AMX-BF16 tiles, no row padding needed.
bool has_bf16_dot_kernels();
void matmul_bf16_dot_cols(const MatmulTask& t, const uint8_t* packed, const uint16_t* xh, const uint16_t* xl,
                          int64_t o_begin, int64_t o_end);

}  // namespace ladder::ops::detail
