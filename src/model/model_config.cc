#include "model/model_config.h"

#include <cmath>
#include <string>

#include "gguf/gguf_file.h"

namespace ladder::model {
namespace {

// Sane upper bounds: anything larger is a corrupt or hostile file.
constexpr int64_t kMaxDim = 1 << 16;
constexpr int64_t kMaxLayers = 1 << 10;
constexpr int64_t kMaxHeads = 1 << 10;
constexpr int64_t kMaxVocab = 1 << 22;
constexpr int64_t kMaxContext = 1 << 24;

Result<int64_t> bounded(const gguf::GgufFile& file, const std::string& key, int64_t lo, int64_t hi) {
  LADDER_ASSIGN_OR_RETURN(uint64_t v, file.get_uint(key));
  if (static_cast<int64_t>(v) < lo || v > static_cast<uint64_t>(hi)) {
    return invalid_argument("model metadata " + key + " = " + std::to_string(v) + " is outside [" +
                            std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return static_cast<int64_t>(v);
}

Result<int64_t> bounded_or(const gguf::GgufFile& file, const std::string& key, int64_t fallback, int64_t lo,
                           int64_t hi) {
  if (file.find(key) == nullptr) return fallback;
  return bounded(file, key, lo, hi);
}

}  // namespace

Result<ModelConfig> ModelConfig::from_gguf(const gguf::GgufFile& file) {
  ModelConfig c;
  LADDER_ASSIGN_OR_RETURN(c.arch, file.get_string("general.architecture"));
  if (c.arch != "llama" && c.arch != "mistral" && c.arch != "qwen2" && c.arch != "qwen3" && c.arch != "phi3") {
    return unimplemented("unsupported model architecture '" + c.arch +
                         "' (general.architecture); Ladder runs llama, mistral, qwen2, qwen3 and phi3");
  }
  const std::string a = c.arch + ".";
  LADDER_ASSIGN_OR_RETURN(c.dim, bounded(file, a + "embedding_length", 1, kMaxDim));
  LADDER_ASSIGN_OR_RETURN(c.n_layers, bounded(file, a + "block_count", 1, kMaxLayers));
  LADDER_ASSIGN_OR_RETURN(c.n_heads, bounded(file, a + "attention.head_count", 1, kMaxHeads));
  LADDER_ASSIGN_OR_RETURN(c.n_kv_heads, bounded_or(file, a + "attention.head_count_kv", c.n_heads, 1, kMaxHeads));
  LADDER_ASSIGN_OR_RETURN(c.ffn_dim, bounded(file, a + "feed_forward_length", 1, 16 * kMaxDim));
  LADDER_ASSIGN_OR_RETURN(c.context_length, bounded(file, a + "context_length", 1, kMaxContext));
  if (c.n_heads % c.n_kv_heads != 0) {
    return invalid_argument("attention.head_count (" + std::to_string(c.n_heads) +
                            ") is not a multiple of attention.head_count_kv (" +
                            std::to_string(c.n_kv_heads) + ")");
  }
  if (c.dim % c.n_heads != 0 && file.find(a + "attention.key_length") == nullptr) {
    return invalid_argument("embedding_length is not a multiple of attention.head_count");
  }
  LADDER_ASSIGN_OR_RETURN(c.head_dim, bounded_or(file, a + "attention.key_length", c.dim / c.n_heads, 2, 1024));
  LADDER_ASSIGN_OR_RETURN(int64_t value_len, bounded_or(file, a + "attention.value_length", c.head_dim, 2, 1024));
  if (value_len != c.head_dim) return unimplemented("attention.value_length differs from key_length");
  if (c.head_dim % 2 != 0) return invalid_argument("head dimension must be even for RoPE");

  LADDER_ASSIGN_OR_RETURN(double eps, file.get_float_or(a + "attention.layer_norm_rms_epsilon", 1e-5));
  if (!(eps > 0.0 && eps < 1.0)) return invalid_argument("attention.layer_norm_rms_epsilon out of range");
  c.rms_eps = static_cast<float>(eps);

  LADDER_ASSIGN_OR_RETURN(double base, file.get_float_or(a + "rope.freq_base", 10000.0));
  if (!(base > 1.0 && std::isfinite(base))) return invalid_argument("rope.freq_base out of range");
  c.rope_freq_base = static_cast<float>(base);
  LADDER_ASSIGN_OR_RETURN(c.rope_dims, bounded_or(file, a + "rope.dimension_count", c.head_dim, 2, c.head_dim));
  if (c.rope_dims % 2 != 0) return invalid_argument("rope.dimension_count must be even");
  const bool neox = c.arch == "qwen2" || c.arch == "qwen3" || c.arch == "phi3";
  c.rope_style = neox ? ops::RopeStyle::kNeox : ops::RopeStyle::kNormal;
  c.qkv_bias = c.arch == "qwen2";
  c.qk_norm = c.arch == "qwen3";
  c.fused_projections = c.arch == "phi3";
  // Sliding-window attention: a query sees the last `window` positions. Ladder
  // attends to the whole context, which is the same while the context is no
  // longer than the window: the context is capped there.
  if (const gguf::Value* v = file.find(a + "attention.sliding_window"); v != nullptr) {
    LADDER_ASSIGN_OR_RETURN(const int64_t window, bounded(file, a + "attention.sliding_window", 1, kMaxContext));
    if (window < c.context_length) {
      c.sliding_window = window;
      c.context_length = window;
    }
  }

  // Frequency scaling as declared. llama3-style per-pair factors come from the
  // rope_freqs.weight tensor and are applied at load (LlamaModel::load).
  double freq_scale = 1.0;
  LADDER_ASSIGN_OR_RETURN(std::string scaling, file.get_string_or(a + "rope.scaling.type", "none"));
  if (scaling == "linear") {
    LADDER_ASSIGN_OR_RETURN(double factor, file.get_float_or(a + "rope.scaling.factor", 1.0));
    if (!(factor >= 1.0 && factor < 1e6)) return invalid_argument("rope.scaling.factor out of range");
    freq_scale = 1.0 / factor;
  } else if (scaling != "none" && !scaling.empty()) {
    return unimplemented("rope.scaling.type '" + scaling + "' is not supported (none, linear)");
  }
  LADDER_ASSIGN_OR_RETURN(double legacy_scale, file.get_float_or(a + "rope.scale_linear", 1.0));
  if (legacy_scale != 1.0) {
    if (!(legacy_scale >= 1.0 && legacy_scale < 1e6)) return invalid_argument("rope.scale_linear out of range");
    freq_scale = 1.0 / legacy_scale;
  }
  c.rope_inv_freq.resize(static_cast<size_t>(c.rope_dims / 2));
  for (int64_t i = 0; i < c.rope_dims / 2; ++i) {
    // Computed in double and rounded once, so the table is the same on every machine.
    c.rope_inv_freq[static_cast<size_t>(i)] = static_cast<float>(
        freq_scale * std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(c.rope_dims)));
  }

  // Vocabulary size: the embedding table is authoritative (checked at load);
  // the tokenizer's token list is the usual source.
  if (const auto* tokens = file.find("tokenizer.ggml.tokens"); tokens != nullptr && tokens->as_array()) {
    c.n_vocab = static_cast<int64_t>(tokens->as_array()->items.size());
  }
  LADDER_ASSIGN_OR_RETURN(c.n_vocab, bounded_or(file, a + "vocab_size", c.n_vocab, 0, kMaxVocab));
  return c;
}

}  // namespace ladder::model
