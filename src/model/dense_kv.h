// DenseKv: KV storage for a fixed set of sequences, each owning a contiguous
// run of blocks, exposed through the paged layout the forward pass reads.
// Used by single-request generation, model tests and benchmarks; the engine
// uses the paged block pool of kv/ instead. Any KV format of ops/kv_codec.h.
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
  // [n_layers][K, V]([n_blocks] blocks, then [n_blocks] staging slots in a
  // staged format), layouts of ops/kv_codec.h.
  std::vector<uint8_t> storage_;
  std::vector<int32_t> slots_;    // staged formats: block b's slot is b
  std::vector<int32_t> tables_;   // [n_seqs][blocks_per_seq]
  KvBuffers buffers_;
};

}  // namespace ladder::model
