#include "model/synth.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "model/retrieval.h"
#include "model/synth_gguf.h"

namespace ladder::model {
namespace {

constexpr int64_t kMaxSynthDim = 1 << 15;

Status check_dims(const SynthOptions& o) {
  auto in_range = [](int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; };
  if (!in_range(o.dim, 8, kMaxSynthDim) || !in_range(o.n_layers, 1, 256) || !in_range(o.n_heads, 1, 256) ||
      !in_range(o.n_kv_heads, 1, 256) || !in_range(o.ffn_dim, 8, 4 * kMaxSynthDim) ||
      !in_range(o.context_length, 16, 1 << 20)) {
    return invalid_argument("synthetic model dimensions out of range (dim 8..32768, layers 1..256, heads 1..256, "
                            "ffn 8..131072, ctx 16..1048576)");
  }
  if (o.dim % o.n_heads != 0) return invalid_argument("--dim must be a multiple of --heads");
  if (o.n_heads % o.n_kv_heads != 0) return invalid_argument("--heads must be a multiple of --kv-heads");
  if ((o.dim / o.n_heads) % 2 != 0) return invalid_argument("head dimension (dim / heads) must be even");
  if (!(o.init_std > 0.0f && o.init_std < 10.0f)) return invalid_argument("init_std must be in (0, 10)");
  bool known = false;
  for (const char* a : kSynthArchitectures) known = known || o.arch == a;
  if (!known) {
    std::string list;
    for (const char* a : kSynthArchitectures) list += (list.empty() ? "" : ", ") + std::string(a);
    return invalid_argument("--arch '" + o.arch + "' is not one synth writes (" + list + ")");
  }
  if (o.long_rope_original_context != 0 &&
      (o.arch != "phi3" || !in_range(o.long_rope_original_context, 16, o.context_length))) {
    return invalid_argument("LongRoPE (--long-rope ORIGINAL) is written for --arch phi3, with 16 <= ORIGINAL <= --ctx");
  }
  if (o.weights == SynthWeights::kRetrieval && o.arch != "llama") {
    return invalid_argument("the retrieval construction is a llama model: --arch llama");
  }
  const auto& t = traits_of(o.dtype);
  if (!t.dequantizable) return invalid_argument("--dtype " + std::string(t.name) + " cannot be generated");
  const int64_t q = t.block_elems;
  if (o.dim % q != 0 || o.ffn_dim % q != 0) {
    return invalid_argument("--dtype " + std::string(t.name) + " needs --dim and --ffn to be multiples of " +
                            std::to_string(q));
  }
  return Status::ok();
}

// phi3's LongRoPE factors and keys (synth.h).
Status add_long_rope(gguf::GgufWriter& w, const SynthOptions& o, int64_t head_dim, std::mt19937_64& rng) {
  const std::string a = o.arch + ".";
  const double original = static_cast<double>(o.long_rope_original_context);
  const double scale = static_cast<double>(o.context_length) / original;
  w.set_u32(a + "rope.scaling.original_context_length", static_cast<uint32_t>(o.long_rope_original_context));
  w.set_f32(a + "rope.scaling.attn_factor",
            static_cast<float>(scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(original)) : 1.0));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const int64_t half = head_dim / 2;
  std::vector<float> shorts(static_cast<size_t>(half)), longs(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const double x = static_cast<double>(i) / static_cast<double>(std::max<int64_t>(1, half - 1));
    shorts[static_cast<size_t>(i)] = static_cast<float>(1.0 + 0.2 * u(rng));
    longs[static_cast<size_t>(i)] =
        static_cast<float>(1.0 + (std::max(scale, 1.0) - 1.0) * std::pow(x, 1.5) * (0.8 + 0.4 * u(rng)));
  }
  LADDER_RETURN_IF_ERROR(synth_gguf::add_vector(w, "rope_factors_short.weight", shorts));
  return synth_gguf::add_vector(w, "rope_factors_long.weight", longs);
}

Status write_random_model(const SynthOptions& o, const std::string& path, const SynthProgress& progress) {
  gguf::GgufWriter w;
  LADDER_ASSIGN_OR_RETURN(const int64_t n_vocab, synth_gguf::add_vocabulary(w, o));
  // gemma3's global layers use base 1e6 (its sliding ones 10000, fixed).
  synth_gguf::add_model_metadata(w, o, n_vocab, o.arch == "gemma3" ? 1e6 : 10000.0);

  struct Planned {
    std::string name;
    int64_t n_in;
    int64_t n_out;  // 0: a vector of n_in
    // A vector of random values rather than ones: a bias (around 0), or a
    // norm weight (around 1).
    enum class Fill { kOnes, kBias, kNorm } fill = Fill::kOnes;
  };
  const int64_t head_dim = o.dim / o.n_heads;
  std::vector<Planned> plan;
  plan.push_back({"token_embd.weight", o.dim, n_vocab});
  for (int64_t l = 0; l < o.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    plan.push_back({p + "attn_norm.weight", o.dim, 0});
    const bool fused = o.arch == "phi3";
    if (fused) {
      plan.push_back({p + "attn_qkv.weight", o.dim, (o.n_heads + 2 * o.n_kv_heads) * head_dim});
    } else {
      plan.push_back({p + "attn_q.weight", o.dim, o.n_heads * head_dim});
      plan.push_back({p + "attn_k.weight", o.dim, o.n_kv_heads * head_dim});
      plan.push_back({p + "attn_v.weight", o.dim, o.n_kv_heads * head_dim});
    }
    if (o.arch == "qwen2") {
      plan.push_back({p + "attn_q.bias", o.n_heads * head_dim, 0, Planned::Fill::kBias});
      plan.push_back({p + "attn_k.bias", o.n_kv_heads * head_dim, 0, Planned::Fill::kBias});
      plan.push_back({p + "attn_v.bias", o.n_kv_heads * head_dim, 0, Planned::Fill::kBias});
    }
    const bool gemma = o.arch == "gemma2" || o.arch == "gemma3";
    if (o.arch == "qwen3" || o.arch == "gemma3") {
      plan.push_back({p + "attn_q_norm.weight", head_dim, 0, Planned::Fill::kNorm});
      plan.push_back({p + "attn_k_norm.weight", head_dim, 0, Planned::Fill::kNorm});
    }
    plan.push_back({p + "attn_output.weight", o.n_heads * head_dim, o.dim});
    if (gemma) plan.push_back({p + "post_attention_norm.weight", o.dim, 0, Planned::Fill::kNorm});
    plan.push_back({p + "ffn_norm.weight", o.dim, 0});
    if (fused) {  // gate rows, then up rows
      plan.push_back({p + "ffn_up.weight", o.dim, 2 * o.ffn_dim});
    } else {
      plan.push_back({p + "ffn_gate.weight", o.dim, o.ffn_dim});
      plan.push_back({p + "ffn_up.weight", o.dim, o.ffn_dim});
    }
    plan.push_back({p + "ffn_down.weight", o.ffn_dim, o.dim});
    if (gemma) plan.push_back({p + "post_ffw_norm.weight", o.dim, 0, Planned::Fill::kNorm});
  }
  plan.push_back({"output_norm.weight", o.dim, 0});
  // gemma models share the output head with the embedding (llama.cpp reads them so).
  if (!o.tied_output && o.arch != "gemma2" && o.arch != "gemma3") plan.push_back({"output.weight", o.dim, n_vocab});

  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal(0.0f, o.init_std);
  if (o.long_rope_original_context > 0) LADDER_RETURN_IF_ERROR(add_long_rope(w, o, head_dim, rng));
  int done = 0;
  for (const Planned& t : plan) {
    if (t.n_out == 0) {  // vectors; random ones spread wider than the weights so that they matter
      std::vector<float> v(static_cast<size_t>(t.n_in), 1.0f);
      if (t.fill == Planned::Fill::kBias) {
        for (float& x : v) x = 10.0f * normal(rng);
      } else if (t.fill == Planned::Fill::kNorm) {
        for (float& x : v) x = 1.0f + 10.0f * normal(rng);
      }
      LADDER_RETURN_IF_ERROR(synth_gguf::add_vector(w, t.name, v));
    } else {
      LADDER_RETURN_IF_ERROR(synth_gguf::add_matrix(w, t.name, o.dtype, t.n_in, t.n_out, [&](int64_t, float* row) {
        for (int64_t i = 0; i < t.n_in; ++i) row[i] = normal(rng);
      }));
    }
    ++done;
    if (progress) progress(done, static_cast<int>(plan.size()), t.name);
  }
  return w.write(path);
}

}  // namespace

Result<SynthOptions> synth_preset(std::string_view preset) {
  SynthOptions o;
  if (preset == "tiny") {
    o.dim = 128, o.n_layers = 2, o.n_heads = 4, o.n_kv_heads = 2, o.ffn_dim = 256, o.context_length = 512;
  } else if (preset == "110m") {
    o.dim = 768, o.n_layers = 12, o.n_heads = 12, o.n_kv_heads = 12, o.ffn_dim = 2048, o.n_vocab = 32000,
    o.context_length = 2048;
  } else if (preset == "1b") {
    o.dim = 2048, o.n_layers = 16, o.n_heads = 32, o.n_kv_heads = 8, o.ffn_dim = 8192, o.n_vocab = 128256,
    o.context_length = 8192, o.tied_output = true;
  } else if (preset == "retrieval") {
    o = retrieval_options();
  } else {
    return invalid_argument("unknown preset '" + std::string(preset) + "' (tiny, 110m, 1b, retrieval)");
  }
  o.name = "ladder-synth-" + std::string(preset);
  return o;
}

Status write_synthetic_model(const SynthOptions& options, const std::string& path, const SynthProgress& progress) {
  LADDER_RETURN_IF_ERROR(check_dims(options));
  if (options.weights == SynthWeights::kRetrieval) return write_retrieval_model(options, path, progress);
  return write_random_model(options, path, progress);
}

}  // namespace ladder::model
