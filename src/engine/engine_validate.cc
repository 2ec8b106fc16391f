// Engine::validate: what a request may ask for, checked before it is queued
// (token ids inside the vocabulary, the prompt and max_tokens inside the
// context and the server's limits, stop strings, the tenant), each refusal
// naming the field at fault.
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "engine/engine.h"
#include "engine/stop_criteria.h"

namespace ladder::engine {

Status Engine::validate(Request& r) const {
  if (Status st = r.sampling.validate(); !st.is_ok()) {
    const bool bias = st.message().rfind("logit_bias", 0) == 0;
    return std::move(st).with_reason("invalid_value").with_param(bias ? "logit_bias" : "");
  }
  const int64_t n_vocab = model_.config().n_vocab;
  for (size_t i = 0; i < r.prompt.size(); ++i) {
    const int32_t t = r.prompt[i];
    if (t < 0 || t >= n_vocab) {
      return invalid_argument(fmt::format("prompt token {} at index {} is outside the vocabulary [0, {})", t, i,
                                          n_vocab))
          .with_param("prompt");
    }
  }
  for (const auto& [t, bias] : r.sampling.logit_bias) {
    if (t >= n_vocab) {
      return invalid_argument(fmt::format("logit_bias names token {}, outside the vocabulary [0, {})", t, n_vocab))
          .with_param("logit_bias");
    }
  }
  const auto n_prompt = static_cast<int64_t>(r.prompt.size());
  const int64_t ctx = context_length();
  if (n_prompt == 0) return invalid_argument("the prompt is empty").with_param("prompt");
  if (n_prompt > max_input_) {
    return out_of_range(fmt::format("this server accepts at most {} input tokens (the model's context is {}); the "
                                    "prompt has {}",
                                    max_input_, ctx, n_prompt))
        .with_reason("context_length_exceeded")
        .with_param("prompt");
  }
  if (r.stop.max_tokens < 0) {
    return invalid_argument(fmt::format("max_tokens must be >= 1, got {}", r.stop.max_tokens))
        .with_param("max_tokens");
  }
  if (r.stop.max_tokens > 0) {
    if (r.stop.max_tokens > max_output_) {
      return invalid_argument(fmt::format("max_tokens is {}; this server allows at most {}", r.stop.max_tokens,
                                          max_output_))
          .with_param("max_tokens");
    }
    if (n_prompt + r.stop.max_tokens > ctx) {
      return out_of_range(fmt::format("the model's context is {} tokens; the prompt has {} and max_tokens asks for "
                                      "{} more",
                                      ctx, n_prompt, r.stop.max_tokens))
          .with_reason("context_length_exceeded")
          .with_param("max_tokens");
    }
  } else {
    r.stop.max_tokens = std::min(max_output_, ctx - n_prompt);
  }
  if (!r.stop.stop_strings.empty() && config_.tokenizer == nullptr) {
    return invalid_argument("stop strings need the engine's tokenizer").with_param("stop");
  }
  if (r.stop.stop_strings.size() > kMaxStopStrings) {
    return invalid_argument(fmt::format("at most {} stop strings are allowed", kMaxStopStrings)).with_param("stop");
  }
  for (const std::string& s : r.stop.stop_strings) {
    if (s.empty() || s.size() > kMaxStopStringBytes) {
      return invalid_argument(fmt::format("each stop string must have 1 to {} bytes", kMaxStopStringBytes))
          .with_param("stop");
    }
  }
  const size_t n_tenants = std::max<size_t>(1, config_.tenants.size());
  if (r.scheduling.tenant < 0 || static_cast<size_t>(r.scheduling.tenant) >= n_tenants) {
    return invalid_argument(fmt::format("tenant {} is unknown to the engine", r.scheduling.tenant));
  }
  if (Status st = scheduler_->validate(n_prompt, r.stop); !st.is_ok()) {
    return std::move(st).with_param(st.code() == StatusCode::kOutOfRange ? "max_tokens" : "prompt");
  }
  return Status::ok();
}

}  // namespace ladder::engine
