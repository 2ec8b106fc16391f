// What the per-target matmul kernels (matmul-inl.h) receive from matmul.cc.
// Internal to ops/.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/tensor_type.h"
#include "ops/stream_strategy.h"

namespace ladder::ops::detail {

// Activations are quantized to 8 bits per block of this many elements for the
// integer kernels (Q8_0, Q4_0, Q4_K, Q6_K weights).
inline constexpr int kActBlock = 32;

// One matmul over a range of output columns. y[r * y_stride + o] for
// r in [0, rows) and the requested o.
struct MatmulTask {
  TensorType type = TensorType::kF32;
  const uint8_t* w = nullptr;  // [n_out][w_row_bytes]
  size_t w_row_bytes = 0;
  int64_t n_in = 0;
  int64_t rows = 0;
  // Float kernels (F32, F16, BF16 weights).
  const float* x = nullptr;  // [rows][n_in]
  // Integer kernels: x quantized per row, per kActBlock elements.
  const int8_t* xq = nullptr;   // [rows][n_in]
  const uint8_t* xu = nullptr;  // [rows][n_in] xq + 128 (for u8 x s8 dot products)
  const float* xd = nullptr;    // [rows][n_in / kActBlock] block scales
  const float* xsum = nullptr;  // [rows][n_in / kActBlock] xd * sum(xq) of the block
  // AMX-INT8 kernels: xq regrouped as [row tile of 16][block][16 rows][32
  // bytes], so a tile load reads 512 contiguous bytes (rows n_in apart would
  // fall in one L1 set when n_in is a multiple of 4 KiB).
  const int8_t* xq_tiles = nullptr;
  // ... and xd, xsum as [row tile][block][16 rows], so a tile's epilogue
  // reads its 16 rows' factors of a block from one line.
  const float* xd_tiles = nullptr;
  const float* xsum_tiles = nullptr;
  float* y = nullptr;
  int64_t y_stride = 0;
  // How a one-row (decode) call streams the weights (ops/kernel_choice.h).
  StreamStrategy stream;
};

// Quantizes `rows` rows of n_in floats (n_in % kActBlock == 0). Each row's
// result depends on that row alone: d = max|x| / 127, q = round(x / d).
void quantize_activations(const float* x, int64_t rows, int64_t n_in, int8_t* xq, uint8_t* xu, float* xd,
                          float* xsum);

// Scalar dequantization of one row of n elements of any dequantizable type
// (the reference for every kernel, and the slow path for rare types): the
// gguf module's dequantize_row(), checked (n must suit the type).
void dequantize_row_scalar(TensorType type, const void* src, float* dst, int64_t n);

}  // namespace ladder::ops::detail
