#include "model/synth_gguf.h"

#include <cstring>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/quant.h"

namespace ladder::model::synth_gguf {
namespace {

using gguf::Value;
using gguf::ValueType;

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

int64_t builtin_vocab_min() {
  return 3 + 256 + 1 + 2 * 94;
}

}  // namespace

Result<int64_t> add_vocabulary(gguf::GgufWriter& w, const SynthOptions& o) {
  if (o.vocab_from.empty()) {
    const int64_t n_vocab = o.n_vocab == 0 ? 512 : o.n_vocab;
    if (n_vocab < builtin_vocab_min()) {
      return invalid_argument("--vocab must be at least " + std::to_string(builtin_vocab_min()) +
                              " for the built-in vocabulary");
    }
    add_builtin_vocab(w, n_vocab);
    return n_vocab;
  }
  LADDER_ASSIGN_OR_RETURN(gguf::GgufFile vocab, gguf::GgufFile::open(o.vocab_from));
  int copied = 0;
  for (const auto& [key, value] : vocab.metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) {
      w.set(key, value);
      ++copied;
    }
  }
  const Value* tokens = vocab.find("tokenizer.ggml.tokens");
  if (copied == 0 || tokens == nullptr || tokens->as_array() == nullptr ||
      tokens->as_array()->items.empty()) {
    return invalid_argument(o.vocab_from + " holds no tokenizer (tokenizer.ggml.tokens)");
  }
  return static_cast<int64_t>(tokens->as_array()->items.size());  // the tokenizer decides the size
}

void add_model_metadata(gguf::GgufWriter& w, const SynthOptions& o, int64_t n_vocab, double rope_freq_base) {
  const std::string a = o.arch + ".";
  w.set_string("general.architecture", o.arch);
  w.set_string("general.name", o.name);
  w.set_u32(a + "context_length", static_cast<uint32_t>(o.context_length));
  w.set_u32(a + "embedding_length", static_cast<uint32_t>(o.dim));
  w.set_u32(a + "block_count", static_cast<uint32_t>(o.n_layers));
  w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(o.ffn_dim));
  w.set_u32(a + "attention.head_count", static_cast<uint32_t>(o.n_heads));
  w.set_u32(a + "attention.head_count_kv", static_cast<uint32_t>(o.n_kv_heads));
  w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_f32(a + "rope.freq_base", static_cast<float>(rope_freq_base));
  w.set_u32(a + "rope.dimension_count", static_cast<uint32_t>(o.dim / o.n_heads));
  w.set_u32(a + "vocab_size", static_cast<uint32_t>(n_vocab));
  if (o.sliding_window > 0) w.set_u32(a + "attention.sliding_window", static_cast<uint32_t>(o.sliding_window));
  if (o.arch == "gemma2") {  // llama.cpp's defaults, written as convert_hf_to_gguf.py does
    w.set_f32(a + "attn_logit_softcapping", 50.0f);
    w.set_f32(a + "final_logit_softcapping", 30.0f);
  }
}

Status add_matrix(gguf::GgufWriter& w, const std::string& name, TensorType type, int64_t n_in, int64_t n_out,
                  const RowFill& fill) {
  const size_t rb = row_bytes(traits_of(type), static_cast<size_t>(n_in));
  std::vector<uint8_t> bytes(rb * static_cast<size_t>(n_out));
  std::vector<float> row(static_cast<size_t>(n_in));
  for (int64_t r = 0; r < n_out; ++r) {
    fill(r, row.data());
    LADDER_RETURN_IF_ERROR(
        gguf::quantize_row(type, row.data(), bytes.data() + static_cast<size_t>(r) * rb, row.size()));
  }
  return w.add_tensor(name, type, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)},
                      std::move(bytes));
}

Status add_vector(gguf::GgufWriter& w, const std::string& name, std::span<const float> values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return w.add_tensor(name, TensorType::kF32, {static_cast<uint64_t>(values.size())}, std::move(bytes));
}

}  // namespace ladder::model::synth_gguf
