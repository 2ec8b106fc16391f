// Row quantizers that fit each block's scales to the data: for the K-quant
// formats every sub-block's scale (and offset) is chosen by least squares
// over a small search of candidate grids, instead of from the sub-block's
// extremes as quant.h's reference quantizers do. The block layouts are
// quant.h's, so its dequantizers (and every kernel) read the result. This is
// the choice llama.cpp's own K-quant quantizers make; for the 32-element
// formats it takes the extremes too, and so does this.
#pragma once

#include <cstddef>

#include "common/status.h"
#include "common/tensor_type.h"

namespace ladder::gguf {

// Writes n floats as `type` into row_bytes(type, n) bytes at dst: Q4_K, Q5_K
// and Q6_K fitted, every other type through quantize_row(). Errors as
// quantize_row() (a length that is not a multiple of the block size, an
// unsupported type).
Status quantize_row_fitted(TensorType type, const float* src, void* dst, size_t n);

}  // namespace ladder::gguf
