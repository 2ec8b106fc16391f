// Synthetic models: a GGUF of a real Llama architecture and a real tokenizer,
// loadable by any GGUF consumer, with either
//  - random N(0, 0.02) weights: speed does not depend on weight values, so
//    benchmarks run on these at realistic sizes; or
//  - weights set by construction (retrieval.h): a model whose correct
//    continuation of any prompt is known, for checking approximations.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/tensor_type.h"

namespace ladder::model {

enum class SynthWeights {
  kRandom,     // N(0, init_std)
  kRetrieval,  // the induction construction of retrieval.h (fixed shapes)
};

// The architectures `ladder synth --arch` writes, as llama.cpp names them:
// llama; mistral (llama's tensors under the name mistral: Ladder serves it,
// llama.cpp knows no such architecture, its Mistral files say llama); qwen2 (llama's plus
// Q, K and V biases, NeoX-style RoPE: Ladder's model reads the name); qwen3
// (llama's plus per-head Q and K RMSNorm weights, NeoX-style RoPE); phi3
// (Q, K and V in one attn_qkv matrix, gate and up in one ffn_up, NeoX-style
// RoPE); gemma2 (llama's plus post_attention_norm and post_ffw_norm, soft
// caps 50 and 30 written, GELU FFN, tied output); gemma3 (gemma2's tensors
// plus per-head Q and K norms, no soft caps). sliding_window, when set, is
// written as the attention window (gemma2/3 slide on every 2nd / 5 of 6
// layers, the others on all). long_rope_original_context, phi3 only, writes
// LongRoPE as convert_hf_to_gguf.py does for Phi-3 128k models:
// rope_factors_short.weight and rope_factors_long.weight (random factors >=
// 1, the long ones growing with the pair index toward context / original),
// rope.scaling.original_context_length and rope.scaling.attn_factor
// (sqrt(1 + ln(context / original) / ln(original)) when the context is
// longer, else 1).
inline constexpr const char* kSynthArchitectures[] = {"llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"};

struct SynthOptions {
  SynthWeights weights = SynthWeights::kRandom;
  std::string arch = "llama";  // one of kSynthArchitectures; the retrieval construction is llama only
  int64_t sliding_window = 0;  // ARCH.attention.sliding_window; 0: not written
  int64_t long_rope_original_context = 0;  // phi3 LongRoPE (above); 0: not written
  int64_t dim = 128;
  int64_t n_layers = 2;
  int64_t n_heads = 4;
  int64_t n_kv_heads = 2;
  int64_t ffn_dim = 256;
  int64_t n_vocab = 0;  // built-in vocabulary size; with vocab_from, the tokenizer decides
  int64_t context_length = 512;
  TensorType dtype = TensorType::kF32;  // weight matrices; norms stay F32
  uint64_t seed = 0;
  float init_std = 0.02f;  // standard deviation of the random weights
  bool tied_output = false;
  // A GGUF whose tokenizer.* metadata is copied (e.g. a vocab-only file).
  // Empty: a built-in byte-level SentencePiece-style vocabulary.
  std::string vocab_from;
  std::string name = "ladder-synth";
};

// Shapes of a named preset: tiny, 110m (dim 768, 12 layers, 12 heads, FFN
// 2048, vocab 32000, ctx 2048), 1b (Llama-3.2-1B-like shapes), retrieval
// (constructed weights, retrieval.h; ctx 4096).
Result<SynthOptions> synth_preset(std::string_view preset);

// Called after each tensor: (tensors done, tensors total, name).
using SynthProgress = std::function<void(int, int, const std::string&)>;

Status write_synthetic_model(const SynthOptions& options, const std::string& path,
                             const SynthProgress& progress = {});

}  // namespace ladder::model
