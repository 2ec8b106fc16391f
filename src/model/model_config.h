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

// The architectures (general.architecture) Ladder runs, as llama.cpp names them.
inline constexpr const char* kArchitectures[] = {"llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"};

struct ModelConfig {
  std::string arch;        // llama | mistral | qwen2 | qwen3 | phi3 | gemma2 | gemma3
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
  // (linear, llama3, LongRoPE) already applied. [rope_dims / 2]
  std::vector<float> rope_inv_freq;
  // LongRoPE (phi3 with rope_factors_long/short tensors): the context the
  // short factors were trained for (rope.scaling.original_context_length;
  // 0: context_length), and the attention factor that scales the rotated
  // dimensions of Q and K (rope.scaling.attn_factor; 1 when absent).
  int64_t rope_original_context = 0;
  float rope_attn_factor = 1.0f;
  // The factor tensor applied to rope_inv_freq at load, if any
  // (rope_freqs.weight, rope_factors_long.weight or rope_factors_short.weight).
  std::string rope_factors;
  bool qkv_bias = false;     // qwen2
  bool qk_norm = false;      // qwen3: RMSNorm of each head's Q and K (own weights) before RoPE
  // phi3: Q, K and V in one matrix (attn_qkv, rows in that order) and the
  // FFN's gate and up in one (ffn_up, gate rows first).
  bool fused_projections = false;
  // Sliding-window attention: a sliding layer's query at position p sees the
  // keys at p - sliding_window < j <= p (0: no layer slides). With
  // swa_period n > 1 layer l slides when l % n < n - 1 (gemma2: 2, gemma3:
  // 6; the others see the whole context), with 1 every layer does.
  int64_t sliding_window = 0;
  int64_t swa_period = 1;
  // gemma2/gemma3: the embedding row is scaled by sqrt(dim); an RMSNorm of
  // the attention output and of the FFN output before each joins the
  // residual stream (post_attention_norm, post_ffw_norm); a GELU-gated FFN.
  float embed_scale = 1.0f;
  bool post_norms = false;
  ops::GatedActivation ffn_activation = ops::GatedActivation::kSilu;
  // Soft caps, cap * tanh(x / cap) (gemma2; 0: none): of the attention
  // scores and of the logits.
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;
  float attn_scale = 0.0f;  // of q.k: 1 / sqrt(head_dim), or as the architecture says
  // gemma3: the sliding layers' RoPE frequencies (base 10000, no scaling);
  // empty: every layer uses rope_inv_freq.
  std::vector<float> rope_inv_freq_swa;
  bool tied_output = false;  // output head shares token_embd

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  // The window layer l attends within (0: the whole context).
  int64_t layer_window(int64_t l) const {
    return sliding_window > 0 && (swa_period <= 1 || l % swa_period < swa_period - 1) ? sliding_window : 0;
  }
  const std::vector<float>& layer_rope_inv_freq(int64_t l) const {
    return layer_window(l) > 0 && !rope_inv_freq_swa.empty() ? rope_inv_freq_swa : rope_inv_freq;
  }

  static Result<ModelConfig> from_gguf(const gguf::GgufFile& file);
};

}  // namespace ladder::model
