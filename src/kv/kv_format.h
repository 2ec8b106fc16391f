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
  // kF32, kF16, kQ8_0 (the q8 format) or kQ4_0 (the q4 format); byte layouts
  // in ops/kv_codec.h.
  TensorType dtype = TensorType::kF32;
  // Staged formats (q4): F16 staging slots for partly filled blocks, shared
  // by all sequences (at least one per block a step can leave partly
  // filled). Ignored by other formats.
  int32_t n_staging = 0;
};

// Errors: a non-positive size (kInvalidArgument), a dtype the attention
// kernels cannot read (kUnimplemented). need_blocks: n_blocks must be >= 1.
Status validate_kv_shape(const KvShape& shape, bool need_blocks);

// Bytes of one block of one layer's K (V takes the same in F32, F16 and Q8,
// see kv_layer_block_bytes_v): block_size x n_kv_heads x head_dim elements in
// the format's layout (ops/kv_codec.h).
Result<size_t> kv_layer_block_bytes(const KvShape& shape);
Result<size_t> kv_layer_block_bytes_v(const KvShape& shape);
// Bytes of one staging slot across all layers, K and V (0 when unstaged).
Result<size_t> kv_staging_bytes(const KvShape& shape);
// Bytes of the whole storage: n_blocks blocks plus n_staging staging slots.
Result<size_t> kv_storage_bytes(const KvShape& shape);
// Bytes of one block across all layers, K and V: what a block costs.
Result<size_t> kv_block_bytes(const KvShape& shape);
// How many blocks fit in `bytes` next to shape.n_staging staging slots
// (shape.n_blocks ignored); 0 when not even the staging slots fit.
Result<int32_t> kv_blocks_that_fit(const KvShape& shape, size_t bytes);

// Whether a format stores KV approximately (q8, q4: the third rung) rather
// than exactly enough for rung 1 (f32, f16).
bool kv_format_is_approximate(TensorType dtype);

// "f16-b16-kt": format, block size, keys transposed within a block.
std::string kv_format_name(const KvShape& shape);

}  // namespace ladder::kv
