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
  bool known = false;
  for (const char* name : kArchitectures) known = known || c.arch == name;
  if (!known) {
    std::string list;
    for (const char* name : kArchitectures) list += (list.empty() ? "" : ", ") + std::string(name);
    return unimplemented("unsupported model architecture '" + c.arch + "' (general.architecture); Ladder runs " +
                         list);
  }
  const bool gemma = c.arch == "gemma2" || c.arch == "gemma3";
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
  const bool neox = c.arch == "qwen2" || c.arch == "qwen3" || c.arch == "phi3" || gemma;
  c.rope_style = neox ? ops::RopeStyle::kNeox : ops::RopeStyle::kNormal;
  c.qkv_bias = c.arch == "qwen2";
  c.qk_norm = c.arch == "qwen3" || c.arch == "gemma3";
  c.fused_projections = c.arch == "phi3";
  c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  if (gemma) {
    c.embed_scale = std::sqrt(static_cast<float>(c.dim));
    c.post_norms = true;
    c.ffn_activation = ops::GatedActivation::kGeluTanh;
    // As llama.cpp: the 27B models (46 layers in gemma2, 62 in gemma3) scale
    // queries by 1 / sqrt(dim / heads), the others by 1 / sqrt(head_dim).
    if (c.n_layers == (c.arch == "gemma2" ? 46 : 62)) {
      c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.dim / c.n_heads));
    }
  }
  if (c.arch == "gemma2") {
    c.swa_period = 2;
    c.sliding_window = 4096;  // llama.cpp's default for gemma2 files without the key
    LADDER_ASSIGN_OR_RETURN(double attn_cap, file.get_float_or(a + "attn_logit_softcapping", 50.0));
    LADDER_ASSIGN_OR_RETURN(double final_cap, file.get_float_or(a + "final_logit_softcapping", 30.0));
    if (!(attn_cap >= 0.0 && attn_cap < 1e6) || !(final_cap >= 0.0 && final_cap < 1e6)) {
      return invalid_argument("gemma2 soft-capping values out of range");
    }
    c.attn_softcap = static_cast<float>(attn_cap);
    c.final_softcap = static_cast<float>(final_cap);
  }
  if (c.arch == "gemma3") c.swa_period = 6;
  if (file.find(a + "attention.sliding_window") != nullptr) {
    LADDER_ASSIGN_OR_RETURN(c.sliding_window, bounded(file, a + "attention.sliding_window", 0, kMaxContext));
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
  // Computed in double and rounded once, so the table is the same on every machine.
  auto inv_freq = [&](double scale, double freq_base) {
    std::vector<float> f(static_cast<size_t>(c.rope_dims / 2));
    for (int64_t i = 0; i < c.rope_dims / 2; ++i) {
      f[static_cast<size_t>(i)] = static_cast<float>(
          scale * std::pow(freq_base, -2.0 * static_cast<double>(i) / static_cast<double>(c.rope_dims)));
    }
    return f;
  };
  c.rope_inv_freq = inv_freq(freq_scale, base);
  LADDER_ASSIGN_OR_RETURN(c.rope_original_context,
                          bounded_or(file, a + "rope.scaling.original_context_length", 0, 0, kMaxContext));
  LADDER_ASSIGN_OR_RETURN(double attn_factor, file.get_float_or(a + "rope.scaling.attn_factor", 1.0));
  if (!(attn_factor > 0.0 && attn_factor < 100.0)) return invalid_argument("rope.scaling.attn_factor out of range");
  c.rope_attn_factor = static_cast<float>(attn_factor);
  // gemma3's sliding layers: base 10000 and no scaling, as llama.cpp.
  if (c.arch == "gemma3" && c.sliding_window > 0) c.rope_inv_freq_swa = inv_freq(1.0, 10000.0);

  // Vocabulary size: the embedding table is authoritative (checked at load);
  // the tokenizer's token list is the usual source.
  if (const auto* tokens = file.find("tokenizer.ggml.tokens"); tokens != nullptr && tokens->as_array()) {
    c.n_vocab = static_cast<int64_t>(tokens->as_array()->items.size());
  }
  LADDER_ASSIGN_OR_RETURN(c.n_vocab, bounded_or(file, a + "vocab_size", c.n_vocab, 0, kMaxVocab));
  return c;
}

}  // namespace ladder::model
