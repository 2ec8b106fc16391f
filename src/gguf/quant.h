// Row conversions between F32 and every tensor type Ladder reads: the
// reference (scalar) dequantizers and quantizers, bit-compatible with the
// ggml block layouts in common/tensor_type.h.
#pragma once

#include <cstddef>

#include "common/status.h"
#include "common/tensor_type.h"

namespace ladder::gguf {

// dst[0..n) = the n elements stored at src in `type`. n must be a multiple of
// the type's block size. kUnimplemented for a type that cannot be dequantized.
Status dequantize_row(TensorType type, const void* src, float* dst, size_t n);

// Writes n floats into row_bytes(type, n) bytes at dst. Supported: F32, F16,
// BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, Q8_K.
Status quantize_row(TensorType type, const float* src, void* dst, size_t n);

}  // namespace ladder::gguf
