#include "model/synth.h"

#include <cstring>
#include <random>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "gguf/quant.h"

namespace ladder::model {
namespace {

using gguf::Value;
using gguf::ValueType;

constexpr int64_t kMaxSynthDim = 1 << 15;

// A SentencePiece-style vocabulary that needs no file: control tokens, the
// 256 byte-fallback pieces, "▁" and printable ASCII pieces (with and without
// the word-start marker), then unused filler up to n_vocab.
void add_builtin_vocab(gguf::GgufWriter& w, int64_t n_vocab) {
  std::vector<Value> tokens, scores, types;
  auto add = [&](std::string piece, float score, int32_t type) {
    tokens.push_back(Value::make_string(std::move(piece)));
    scores.push_back(Value::make_float(ValueType::kFloat32, score));
    types.push_back(Value::make_int(ValueType::kInt32, type));
  };
  // token_type: 1 normal, 2 unknown, 3 control, 5 unused, 6 byte.
  add("<unk>", 0.0f, 2);
  add("<s>", 0.0f, 3);
  add("</s>", 0.0f, 3);
  static const char* kHex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) add(std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">", 0.0f, 6);
  const std::string marker = "\xE2\x96\x81";  // ▁
  add(marker, -1.0f, 1);
  for (int ch = 33; ch < 127; ++ch) add(std::string(1, static_cast<char>(ch)), -2.0f, 1);
  for (int ch = 33; ch < 127; ++ch) add(marker + std::string(1, static_cast<char>(ch)), -3.0f, 1);
  for (int64_t i = static_cast<int64_t>(tokens.size()); i < n_vocab; ++i) {
    add("<unused" + std::to_string(i) + ">", -1e9f, 5);
  }
  w.set_string("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens", Value::make_array(ValueType::kString, std::move(tokens)));
  w.set("tokenizer.ggml.scores", Value::make_array(ValueType::kFloat32, std::move(scores)));
  w.set("tokenizer.ggml.token_type", Value::make_array(ValueType::kInt32, std::move(types)));
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_bool("tokenizer.ggml.add_eos_token", false);
}

int64_t builtin_vocab_min() { return 3 + 256 + 1 + 2 * 94; }

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
  const auto& t = traits_of(o.dtype);
  if (!t.dequantizable) return invalid_argument("--dtype " + std::string(t.name) + " cannot be generated");
  const int64_t q = t.block_elems;
  if (o.dim % q != 0 || o.ffn_dim % q != 0) {
    return invalid_argument("--dtype " + std::string(t.name) + " needs --dim and --ffn to be multiples of " +
                            std::to_string(q));
  }
  return Status::ok();
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
  } else {
    return invalid_argument("unknown preset '" + std::string(preset) + "' (tiny, 110m, 1b)");
  }
  o.name = "ladder-synth-" + std::string(preset);
  return o;
}

Status write_synthetic_model(const SynthOptions& options, const std::string& path, const SynthProgress& progress) {
  SynthOptions o = options;
  LADDER_RETURN_IF_ERROR(check_dims(o));
  gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", o.name);

  if (!o.vocab_from.empty()) {
    LADDER_ASSIGN_OR_RETURN(gguf::GgufFile vocab, gguf::GgufFile::open(o.vocab_from));
    int copied = 0;
    for (const auto& [key, value] : vocab.metadata()) {
      if (key.rfind("tokenizer.", 0) == 0) {
        w.set(key, value);
        ++copied;
      }
    }
    const Value* tokens = vocab.find("tokenizer.ggml.tokens");
    if (copied == 0 || tokens == nullptr || tokens->as_array() == nullptr) {
      return invalid_argument(o.vocab_from + " holds no tokenizer (tokenizer.ggml.tokens)");
    }
    const auto n = static_cast<int64_t>(tokens->as_array()->items.size());
    o.n_vocab = n;  // the tokenizer decides the vocabulary size
  } else {
    if (o.n_vocab == 0) o.n_vocab = 512;
    if (o.n_vocab < builtin_vocab_min()) {
      return invalid_argument("--vocab must be at least " + std::to_string(builtin_vocab_min()) +
                              " for the built-in vocabulary");
    }
    add_builtin_vocab(w, o.n_vocab);
  }

  w.set_u32("llama.context_length", static_cast<uint32_t>(o.context_length));
  w.set_u32("llama.embedding_length", static_cast<uint32_t>(o.dim));
  w.set_u32("llama.block_count", static_cast<uint32_t>(o.n_layers));
  w.set_u32("llama.feed_forward_length", static_cast<uint32_t>(o.ffn_dim));
  w.set_u32("llama.attention.head_count", static_cast<uint32_t>(o.n_heads));
  w.set_u32("llama.attention.head_count_kv", static_cast<uint32_t>(o.n_kv_heads));
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_f32("llama.rope.freq_base", 10000.0f);
  w.set_u32("llama.rope.dimension_count", static_cast<uint32_t>(o.dim / o.n_heads));
  w.set_u32("llama.vocab_size", static_cast<uint32_t>(o.n_vocab));

  struct Planned {
    std::string name;
    int64_t n_in;
    int64_t n_out;  // 0: a vector of n_in
  };
  const int64_t head_dim = o.dim / o.n_heads;
  std::vector<Planned> plan;
  plan.push_back({"token_embd.weight", o.dim, o.n_vocab});
  for (int64_t l = 0; l < o.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    plan.push_back({p + "attn_norm.weight", o.dim, 0});
    plan.push_back({p + "attn_q.weight", o.dim, o.n_heads * head_dim});
    plan.push_back({p + "attn_k.weight", o.dim, o.n_kv_heads * head_dim});
    plan.push_back({p + "attn_v.weight", o.dim, o.n_kv_heads * head_dim});
    plan.push_back({p + "attn_output.weight", o.n_heads * head_dim, o.dim});
    plan.push_back({p + "ffn_norm.weight", o.dim, 0});
    plan.push_back({p + "ffn_gate.weight", o.dim, o.ffn_dim});
    plan.push_back({p + "ffn_up.weight", o.dim, o.ffn_dim});
    plan.push_back({p + "ffn_down.weight", o.ffn_dim, o.dim});
  }
  plan.push_back({"output_norm.weight", o.dim, 0});
  if (!o.tied_output) plan.push_back({"output.weight", o.dim, o.n_vocab});

  std::mt19937_64 rng(o.seed);
  std::normal_distribution<float> normal(0.0f, o.init_std);
  const auto& traits = traits_of(o.dtype);
  int done = 0;
  for (const Planned& t : plan) {
    if (t.n_out == 0) {  // norm weights: ones, F32
      std::vector<uint8_t> bytes(static_cast<size_t>(t.n_in) * 4);
      std::vector<float> ones(static_cast<size_t>(t.n_in), 1.0f);
      std::memcpy(bytes.data(), ones.data(), bytes.size());
      LADDER_RETURN_IF_ERROR(w.add_tensor(t.name, TensorType::kF32, {static_cast<uint64_t>(t.n_in)}, std::move(bytes)));
    } else {
      const size_t rb = row_bytes(traits, static_cast<size_t>(t.n_in));
      std::vector<uint8_t> bytes(rb * static_cast<size_t>(t.n_out));
      std::vector<float> row(static_cast<size_t>(t.n_in));
      for (int64_t r = 0; r < t.n_out; ++r) {
        for (float& x : row) x = normal(rng);
        LADDER_RETURN_IF_ERROR(
            gguf::quantize_row(o.dtype, row.data(), bytes.data() + static_cast<size_t>(r) * rb, row.size()));
      }
      LADDER_RETURN_IF_ERROR(w.add_tensor(t.name, o.dtype,
                                          {static_cast<uint64_t>(t.n_in), static_cast<uint64_t>(t.n_out)},
                                          std::move(bytes)));
    }
    ++done;
    if (progress) progress(done, static_cast<int>(plan.size()), t.name);
  }
  return w.write(path);
}

}  // namespace ladder::model
