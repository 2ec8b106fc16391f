// ModelConfig: the hyper-parameters of a Llama-family decoder, read from GGUF
// metadata (`<arch>.embedding_length`, ...) and validated against limits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "ops/elementwise.h"

namespace ladder::gguf {
class GgufFile;
}

namespace ladder::model {

struct ModelConfig {
  std::string arch;        // llama | mistral | qwen2 | qwen3 | phi3
  int64_t n_vocab = 0;
  int64_t dim = 0;         // embedding_length
  int64_t n_layers = 0;    // block_count
  int64_t n_heads = 0;     // attention.head_count
  int64_t n_kv_heads = 0;  // attention.head_count_kv
  int64_t head_dim = 0;    // dim / n_heads unless key_length says otherwise
  int64_t ffn_dim = 0;     // feed_forward_length
  int64_t context_length = 0;
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  int64_t rope_dims = 0;   // rotated dimensions per head (rope.dimension_count)
  ops::RopeStyle rope_style = ops::RopeStyle::kNormal;
  // Per rotated pair i: the inverse frequency, with the declared scaling
  // (linear, llama3) already applied. [rope_dims / 2]
  std::vector<float> rope_inv_freq;
  bool qkv_bias = false;     // qwen2
  bool qk_norm = false;      // qwen3: RMSNorm of each head's Q and K (own weights) before RoPE
  // phi3: Q, K and V in one matrix (attn_qkv, rows in that order) and the
  // FFN's gate and up in one (ffn_up, gate rows first).
  bool fused_projections = false;
  // The model's sliding attention window when it is shorter than its
  // trained context; context_length is then capped to it (0: none).
  int64_t sliding_window = 0;
  bool tied_output = false;  // output head shares token_embd

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }

  static Result<ModelConfig> from_gguf(const gguf::GgufFile& file);
};

}  // namespace ladder::model
