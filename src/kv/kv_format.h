// KvShape and the arithmetic of a KV format: how many bytes one block takes
// in each layer and in all of them, how many blocks fit a memory budget, and
// the format's name, which is part of every prefix-cache key so that blocks
// written in one format are never read as another.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "common/tensor_type.h"

namespace ladder::kv {

struct KvShape {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int block_size = 16;
  int32_t n_blocks = 0;
  TensorType dtype = TensorType::kF32;  // kF32 or kF16
};

// Errors: a non-positive size (kInvalidArgument), a dtype the attention
// kernels cannot read (kUnimplemented). need_blocks: n_blocks must be >= 1.
Status validate_kv_shape(const KvShape& shape, bool need_blocks);

// Bytes of one block of one layer's K (or V): block_size x n_kv_heads x
// head_dim elements, ordered as ops::KvLayout says (K dim-major, V token-major).
Result<size_t> kv_layer_block_bytes(const KvShape& shape);
// Bytes of one block across all layers, K and V: what a block costs.
Result<size_t> kv_block_bytes(const KvShape& shape);
// How many blocks fit in `bytes` (shape.n_blocks ignored).
Result<int32_t> kv_blocks_that_fit(const KvShape& shape, size_t bytes);

// "f16-b16-kt": element type, block size, keys transposed within a block.
std::string kv_format_name(const KvShape& shape);

}  // namespace ladder::kv
