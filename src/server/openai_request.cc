#include "server/openai_request.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace ladder::server {

namespace {

using nlohmann::json;

std::optional<ApiError> parse_body(std::string_view body, json* doc) {
  try {
    *doc = json::parse(body.begin(), body.end());
  } catch (const json::exception& e) {
    // e.what() quotes the parser's position; it never echoes raw bytes back.
    return ApiError{400, std::string("request body is not valid JSON: ") + e.what(), "invalid_request_error", "",
                    "invalid_json", 0};
  }
  if (!doc->is_object()) {
    return ApiError{400, "request body must be a JSON object", "invalid_request_error", "", "invalid_json", 0};
  }
  return std::nullopt;
}

// Field readers: absent or null leaves *out unchanged.
std::optional<ApiError> read_float(const json& doc, const char* key, double lo, double hi, float* out) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return invalid_field(key, std::string("'") + key + "' must be a number");
  double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    return invalid_field(key, std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " +
                                  std::to_string(hi) + "], got " + it->dump());
  }
  *out = static_cast<float>(v);
  return std::nullopt;
}

std::optional<ApiError> read_int(const json& doc, const char* key, int64_t lo, int64_t hi, int64_t* out) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) return invalid_field(key, std::string("'") + key + "' must be an integer");
  int64_t v = 0;
  if (it->is_number_unsigned()) {
    uint64_t u = it->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return invalid_field(key, std::string("'") + key + "' is out of range, got " + it->dump());
    }
    v = static_cast<int64_t>(u);
  } else {
    v = it->get<int64_t>();
  }
  if (v < lo || v > hi) {
    return invalid_field(key, std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " +
                                  std::to_string(hi) + "], got " + std::to_string(v));
  }
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> read_bool(const json& doc, const char* key, bool* out) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return invalid_field(key, std::string("'") + key + "' must be a boolean");
  *out = it->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> read_string(const json& doc, const char* key, std::string* out) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return invalid_field(key, std::string("'") + key + "' must be a string");
  *out = it->get<std::string>();
  return std::nullopt;
}

#define LADDER_API_TRY(expr)                 \
  do {                                       \
    if (auto _err = (expr)) return _err;     \
  } while (0)

// Fields common to both endpoints. `chat` selects the chat form of logprobs
// (a boolean plus top_logprobs) over the completions form (an integer).
std::optional<ApiError> parse_options(const json& doc, bool chat, GenerationOptions* o) {
  LADDER_API_TRY(read_string(doc, "model", &o->model));
  LADDER_API_TRY(read_string(doc, "user", &o->user));
  int64_t n = 1;
  LADDER_API_TRY(read_int(doc, "n", 1, std::numeric_limits<int64_t>::max(), &n));
  if (n != 1) return invalid_field("n", "only n = 1 is supported; send separate requests for more choices");
  int64_t best_of = 1;
  LADDER_API_TRY(read_int(doc, "best_of", 1, std::numeric_limits<int64_t>::max(), &best_of));
  if (best_of != 1) return invalid_field("best_of", "only best_of = 1 is supported");
  bool echo = false;
  LADDER_API_TRY(read_bool(doc, "echo", &echo));
  if (echo) return invalid_field("echo", "echo is not supported");
  if (auto it = doc.find("suffix"); it != doc.end() && !it->is_null()) {
    return invalid_field("suffix", "suffix (insertion) is not supported");
  }

  const int64_t kMaxTokensCap = 1 << 30;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    int64_t v = -1;
    LADDER_API_TRY(read_int(doc, key, 1, kMaxTokensCap, &v));
    if (v >= 1) o->max_tokens = v;
  }
  engine::SamplingParams& s = o->sampling;
  LADDER_API_TRY(read_float(doc, "temperature", 0.0, 2.0, &s.temperature));
  LADDER_API_TRY(read_float(doc, "top_p", 0.0, 1.0, &s.top_p));
  if (s.top_p <= 0.0f) return invalid_field("top_p", "'top_p' must be in (0, 1]");
  int64_t top_k = 0;
  LADDER_API_TRY(read_int(doc, "top_k", -1, 1 << 20, &top_k));
  s.top_k = top_k < 0 ? 0 : static_cast<int32_t>(top_k);  // -1 = off, as in vLLM
  LADDER_API_TRY(read_float(doc, "min_p", 0.0, 1.0, &s.min_p));
  LADDER_API_TRY(read_float(doc, "presence_penalty", -2.0, 2.0, &s.presence_penalty));
  LADDER_API_TRY(read_float(doc, "frequency_penalty", -2.0, 2.0, &s.frequency_penalty));
  LADDER_API_TRY(read_float(doc, "repetition_penalty", 0.01, 100.0, &s.repetition_penalty));
  if (auto it = doc.find("seed"); it != doc.end() && !it->is_null()) {
    if (!it->is_number_integer()) return invalid_field("seed", "'seed' must be an integer");
    s.seed = it->is_number_unsigned() ? it->get<uint64_t>() : static_cast<uint64_t>(it->get<int64_t>());
  }

  if (chat) {
    LADDER_API_TRY(read_bool(doc, "logprobs", &o->logprobs));
    int64_t top = 0;
    LADDER_API_TRY(read_int(doc, "top_logprobs", 0, engine::kMaxTopLogprobs, &top));
    if (top > 0 && !o->logprobs) return invalid_field("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    s.top_logprobs = static_cast<int32_t>(top);
  } else {
    int64_t top = -1;
    LADDER_API_TRY(read_int(doc, "logprobs", 0, engine::kMaxTopLogprobs, &top));
    if (top >= 0) {
      o->logprobs = true;
      s.top_logprobs = static_cast<int32_t>(top);
    }
  }

  if (auto it = doc.find("stop"); it != doc.end() && !it->is_null()) {
    if (it->is_string()) {
      o->stop.push_back(it->get<std::string>());
    } else if (it->is_array()) {
      if (it->size() > kMaxStopStrings) {
        return invalid_field("stop", "at most " + std::to_string(kMaxStopStrings) + " stop strings are allowed");
      }
      for (const auto& e : *it) {
        if (!e.is_string()) return invalid_field("stop", "'stop' must be a string or a list of strings");
        o->stop.push_back(e.get<std::string>());
      }
    } else {
      return invalid_field("stop", "'stop' must be a string or a list of strings");
    }
    for (const auto& st : o->stop) {
      if (st.empty()) return invalid_field("stop", "stop strings must not be empty");
      if (st.size() > kMaxStopLength) {
        return invalid_field("stop", "stop strings are limited to " + std::to_string(kMaxStopLength) + " bytes");
      }
    }
  }

  LADDER_API_TRY(read_bool(doc, "ignore_eos", &o->ignore_eos));
  LADDER_API_TRY(read_bool(doc, "stream", &o->stream));
  if (auto it = doc.find("stream_options"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) return invalid_field("stream_options", "'stream_options' must be an object");
    if (!o->stream) return invalid_field("stream_options", "'stream_options' is only allowed with 'stream': true");
    if (auto e = read_bool(*it, "include_usage", &o->include_usage)) {
      e->param = "stream_options.include_usage";
      return e;
    }
  }
  if (Status st = s.validate(); !st.is_ok()) return invalid_field("", st.message());
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_completion_request(std::string_view body, CompletionRequest* out) {
  json doc;
  LADDER_API_TRY(parse_body(body, &doc));
  auto it = doc.find("prompt");
  if (it == doc.end() || it->is_null()) return invalid_field("prompt", "'prompt' is required");
  if (it->is_string()) {
    out->prompt = it->get<std::string>();
  } else if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
    out->prompt = (*it)[0].get<std::string>();
  } else if (it->is_array() && !it->empty() && (*it)[0].is_number()) {
    std::vector<int32_t> ids;
    for (const auto& e : *it) {
      if (!e.is_number_integer()) return invalid_field("prompt", "token-id prompts must be lists of integers");
      int64_t v = e.is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(e.get<uint64_t>(), 1ull << 40))
                                         : e.get<int64_t>();
      if (v < 0 || v > std::numeric_limits<int32_t>::max()) {
        return invalid_field("prompt", "token id " + std::to_string(v) + " is out of range");
      }
      ids.push_back(static_cast<int32_t>(v));
    }
    out->prompt_tokens = std::move(ids);
  } else if (it->is_array() && it->size() > 1) {
    return invalid_field("prompt", "batched prompts are not supported; send one prompt per request");
  } else {
    return invalid_field("prompt", "'prompt' must be a string, a list of one string, or a list of token ids");
  }
  return parse_options(doc, /*chat=*/false, &out->options);
}

std::optional<ApiError> parse_chat_request(std::string_view body, ChatRequest* out) {
  json doc;
  LADDER_API_TRY(parse_body(body, &doc));
  auto it = doc.find("messages");
  if (it == doc.end() || !it->is_array() || it->empty()) {
    return invalid_field("messages", "'messages' must be a non-empty list");
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return invalid_field(where, where + " must be an object");
    ChatMessage msg;
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return invalid_field(where + ".role", where + ".role must be a string");
    msg.role = role->get<std::string>();
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool" &&
        msg.role != "developer") {
      return invalid_field(where + ".role", "unknown role '" + msg.role + "'");
    }
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      if (msg.role != "assistant") return invalid_field(where + ".content", where + ".content is required");
    } else if (content->is_string()) {
      msg.content = content->get<std::string>();
    } else if (content->is_array()) {
      for (const auto& part : *content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string()) {
          return invalid_field(where + ".content", "only text content parts are supported");
        }
        msg.content += part["text"].get<std::string>();
      }
    } else {
      return invalid_field(where + ".content", where + ".content must be a string or a list of text parts");
    }
    out->messages.push_back(std::move(msg));
  }
  return parse_options(doc, /*chat=*/true, &out->options);
}

}  // namespace ladder::server
