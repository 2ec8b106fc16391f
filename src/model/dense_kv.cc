#include "model/dense_kv.h"

#include "common/check.h"
#include "ops/kv_codec.h"

namespace ladder::model {

DenseKv::DenseKv(const ModelConfig& config, int n_seqs, int64_t max_tokens, int block_size, TensorType dtype)
    : block_size_(block_size), blocks_per_seq_((max_tokens + block_size - 1) / block_size) {
  LADDER_CHECK(n_seqs > 0 && max_tokens > 0 && block_size > 0, "DenseKv needs a positive size");
  const int kvh = static_cast<int>(config.n_kv_heads), hd = static_cast<int>(config.head_dim);
  LADDER_CHECK(ops::kv_shape_problem(dtype, block_size, hd) == nullptr,
               "DenseKv: a KV format the shape cannot hold");
  const int64_t n_blocks = blocks_per_seq_ * n_seqs;
  // A staged format (q4) gives every block its own staging slot here: simple,
  // and as large as F16 (this storage serves tests and benchmarks).
  const size_t slot_bytes = ops::kv_layer_staging_bytes(dtype, block_size, kvh, hd);
  if (slot_bytes > 0) {
    slots_.resize(static_cast<size_t>(n_blocks));
    for (int64_t b = 0; b < n_blocks; ++b) slots_[static_cast<size_t>(b)] = static_cast<int32_t>(b);
  }
  size_t layer_bytes[2];
  for (int kind = 0; kind < 2; ++kind) {
    const auto layout = kind == 0 ? ops::KvLayout::kDimMajor : ops::KvLayout::kTokenMajor;
    layer_bytes[kind] = (ops::kv_layer_block_bytes(dtype, layout, block_size, kvh, hd) + slot_bytes) *
                        static_cast<size_t>(n_blocks);
  }
  storage_.assign((layer_bytes[0] + layer_bytes[1]) * static_cast<size_t>(config.n_layers), 0);
  for (int64_t l = 0; l < config.n_layers; ++l) {
    for (int kind = 0; kind < 2; ++kind) {
      const auto layout = kind == 0 ? ops::KvLayout::kDimMajor : ops::KvLayout::kTokenMajor;
      const size_t block_bytes = ops::kv_layer_block_bytes(dtype, layout, block_size, kvh, hd);
      ops::PagedKvLayer layer;
      layer.base = storage_.data() + static_cast<size_t>(l) * (layer_bytes[0] + layer_bytes[1]) +
                   (kind == 0 ? 0 : layer_bytes[0]);
      layer.block_stride_bytes = block_bytes;
      if (slot_bytes > 0) {
        layer.staging = layer.base + block_bytes * static_cast<size_t>(n_blocks);
        layer.staging_stride_bytes = slot_bytes;
        layer.staging_slot = slots_.data();
      }
      layer.block_size = block_size;
      layer.n_kv_heads = static_cast<int>(config.n_kv_heads);
      layer.head_dim = static_cast<int>(config.head_dim);
      layer.dtype = dtype;
      layer.layout = kind == 0 ? ops::KvLayout::kDimMajor : ops::KvLayout::kTokenMajor;
      (kind == 0 ? buffers_.k : buffers_.v).push_back(layer);
    }
  }
  tables_.resize(static_cast<size_t>(n_blocks));
  for (int64_t b = 0; b < n_blocks; ++b) tables_[static_cast<size_t>(b)] = static_cast<int32_t>(b);
}

std::span<const int32_t> DenseKv::block_table(int s) const {
  return {tables_.data() + static_cast<int64_t>(s) * blocks_per_seq_, static_cast<size_t>(blocks_per_seq_)};
}

}  // namespace ladder::model
