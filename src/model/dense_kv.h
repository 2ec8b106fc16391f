// DenseKv: KV storage for a fixed set of sequences, each owning a contiguous
// run of blocks, exposed through the paged layout the forward pass reads.
// Used by single-request generation and model tests; the engine uses the
// paged block pool of kv/ instead.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/forward_batch.h"
#include "model/model_config.h"

namespace ladder::model {

class DenseKv {
 public:
  // Room for n_seqs sequences of up to max_tokens positions each.
  DenseKv(const ModelConfig& config, int n_seqs, int64_t max_tokens, int block_size = 16,
          TensorType dtype = TensorType::kF32);

  const KvBuffers& buffers() const { return buffers_; }
  // Block table of sequence s: blocks [s * blocks_per_seq, (s + 1) * blocks_per_seq).
  std::span<const int32_t> block_table(int s) const;
  int64_t max_tokens() const { return blocks_per_seq_ * block_size_; }

 private:
  int block_size_;
  int64_t blocks_per_seq_;
  std::vector<uint8_t> storage_;  // [n_layers][K, V][n_blocks] blocks of block_size x kv_dim (ops::KvLayout)
  std::vector<int32_t> tables_;   // [n_seqs][blocks_per_seq]
  KvBuffers buffers_;
};

}  // namespace ladder::model
