#include "model/dense_kv.h"

#include "common/check.h"

namespace ladder::model {

DenseKv::DenseKv(const ModelConfig& config, int n_seqs, int64_t max_tokens, int block_size, TensorType dtype)
    : block_size_(block_size), blocks_per_seq_((max_tokens + block_size - 1) / block_size) {
  LADDER_CHECK(dtype == TensorType::kF32 || dtype == TensorType::kF16, "KV dtype must be F32 or F16");
  LADDER_CHECK(n_seqs > 0 && max_tokens > 0 && block_size > 0, "DenseKv needs a positive size");
  const int64_t n_blocks = blocks_per_seq_ * n_seqs;
  const size_t elem = dtype == TensorType::kF32 ? 4 : 2;
  const size_t block_bytes = static_cast<size_t>(block_size) * static_cast<size_t>(config.kv_dim()) * elem;
  const size_t layer_bytes = block_bytes * static_cast<size_t>(n_blocks);
  storage_.assign(2 * layer_bytes * static_cast<size_t>(config.n_layers), 0);
  for (int64_t l = 0; l < config.n_layers; ++l) {
    for (int kind = 0; kind < 2; ++kind) {
      ops::PagedKvLayer layer;
      layer.base = storage_.data() + (static_cast<size_t>(l) * 2 + static_cast<size_t>(kind)) * layer_bytes;
      layer.block_stride_bytes = block_bytes;
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
