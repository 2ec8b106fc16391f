#include "server/embedder.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "model/dense_kv.h"
#include "ops/thread_pool.h"

namespace ladder::server {

namespace {

std::string base64_floats(const std::vector<float>& v) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // little-endian float32, as OpenAI sends them
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const auto b0 = static_cast<uint8_t>(bytes[i]);
    const uint8_t b1 = i + 1 < bytes.size() ? static_cast<uint8_t>(bytes[i + 1]) : 0;
    const uint8_t b2 = i + 2 < bytes.size() ? static_cast<uint8_t>(bytes[i + 2]) : 0;
    out += kAlphabet[b0 >> 2];
    out += kAlphabet[((b0 & 3) << 4) | (b1 >> 4)];
    out += i + 1 < bytes.size() ? kAlphabet[((b1 & 15) << 2) | (b2 >> 6)] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[b2 & 63] : '=';
  }
  return out;
}

}  // namespace

Embedder::Embedder(const model::LlamaModel& model, const tokenizer::Tokenizer& tokenizer, int64_t max_input_tokens)
    : model_(model), tokenizer_(tokenizer), max_input_tokens_(max_input_tokens) {}

Result<std::vector<float>> Embedder::embed(std::span<const int32_t> tokens) const {
  const model::ModelConfig& c = model_.config();
  const auto n = static_cast<int64_t>(tokens.size());
  if (n == 0) return invalid_argument("an input is empty");
  model::DenseKv kv(c, 1, n);
  model::BatchSequence seq;
  seq.tokens = tokens;
  seq.block_table = kv.block_table(0);
  seq.logits = model::BatchSequence::Logits::kHidden;
  std::vector<float> hidden(static_cast<size_t>(n * c.dim));
  ops::ThreadPool pool(1);
  LADDER_RETURN_IF_ERROR(model_.forward(std::span(&seq, 1), kv.buffers(), {}, pool, hidden));
  std::vector<double> sum(static_cast<size_t>(c.dim), 0.0);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t d = 0; d < c.dim; ++d) sum[static_cast<size_t>(d)] += hidden[static_cast<size_t>(t * c.dim + d)];
  }
  double norm = 0.0;
  for (double s : sum) norm += s * s;
  norm = std::sqrt(norm);
  std::vector<float> out(sum.size());
  for (size_t d = 0; d < sum.size(); ++d) out[d] = static_cast<float>(norm > 0 ? sum[d] / norm : 0.0);
  return out;
}

Result<nlohmann::json> Embedder::respond(const EmbeddingsRequest& request, const std::string& model_name,
                                         int64_t* prompt_tokens) const {
  if (request.dimensions && *request.dimensions != width()) {
    return invalid_argument(fmt::format("this model's embeddings have {} dimensions; 'dimensions' asks for {}",
                                        width(), *request.dimensions))
        .with_param("dimensions");
  }
  nlohmann::json data = nlohmann::json::array();
  *prompt_tokens = 0;
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    const EmbeddingsRequest::Input& in = request.inputs[i];
    std::vector<int32_t> ids = in.tokens ? *in.tokens
                                         : tokenizer_.encode(in.text, tokenizer_.add_bos_default(),
                                                             /*parse_special=*/false);
    for (int32_t id : ids) {
      if (id >= tokenizer_.n_vocab()) {
        return invalid_argument(fmt::format("input {}: token id {} is outside the vocabulary of {}", i, id,
                                            tokenizer_.n_vocab()))
            .with_param("input");
      }
    }
    if (static_cast<int64_t>(ids.size()) > max_input_tokens_) {
      return out_of_range(fmt::format("input {} has {} tokens; this server embeds at most {}", i, ids.size(),
                                      max_input_tokens_))
          .with_reason("context_length_exceeded")
          .with_param("input");
    }
    LADDER_ASSIGN_OR_RETURN(std::vector<float> e, embed(ids));
    *prompt_tokens += static_cast<int64_t>(ids.size());
    nlohmann::json item = {{"object", "embedding"}, {"index", i}};
    if (request.base64) {
      item["embedding"] = base64_floats(e);
    } else {
      item["embedding"] = std::move(e);
    }
    data.push_back(std::move(item));
  }
  return nlohmann::json{{"object", "list"},
                        {"data", std::move(data)},
                        {"model", model_name},
                        {"usage", {{"prompt_tokens", *prompt_tokens}, {"total_tokens", *prompt_tokens}}}};
}

}  // namespace ladder::server
