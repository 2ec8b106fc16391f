#include "harness/context_fill.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace ladder::harness {

using nlohmann::json;

Result<int64_t> count_prompt_tokens(const net::Endpoint& ep, const std::string& api_key, const std::string& model,
                                    const std::string& prompt) {
  net::HttpRequestSpec spec;
  spec.method = "POST";
  spec.path = "/v1/completions";
  spec.api_key = api_key;
  spec.body = json{{"model", model}, {"prompt", prompt}, {"max_tokens", 1}, {"temperature", 0}}.dump();
  spec.timeout_s = 120;
  LADDER_ASSIGN_OR_RETURN(net::HttpResponse resp, net::http_fetch(ep, spec));
  json j = json::parse(resp.body, nullptr, false);
  if (resp.status != 200) {
    std::string message = !j.is_discarded() && j.contains("/error/message"_json_pointer)
                              ? j["/error/message"_json_pointer].dump()
                              : resp.body.substr(0, 200);
    return failed_precondition(fmt::format("counting prompt tokens: HTTP {}: {}", resp.status, message));
  }
  if (j.is_discarded() || !j.contains("/usage/prompt_tokens"_json_pointer) ||
      !j["/usage/prompt_tokens"_json_pointer].is_number_integer()) {
    return failed_precondition("counting prompt tokens: the server's answer has no usage.prompt_tokens");
  }
  return j["/usage/prompt_tokens"_json_pointer].get<int64_t>();
}

Result<std::vector<WorkloadRequest>> generate_fitted(const GeneratorOptions& o, const std::string& corpus,
                                                     double chars_per_token,
                                                     const std::function<Result<int64_t>(const std::string&)>& count,
                                                     ContextFit* fit) {
  LADDER_ASSIGN_OR_RETURN(int64_t target, long_prompt_tokens(o));
  *fit = ContextFit{};
  fit->target_tokens = target;
  double ratio = chars_per_token;
  auto counted = [&](const std::string& prompt) {
    ++fit->counted;
    return count(prompt);
  };
  {
    // The probe: plain prose of at most context/2 characters.
    TextSynthesizer plain(corpus, 1.0);
    const auto chars = static_cast<size_t>(std::min<int64_t>(target, o.context > 0 ? o.context / 2 : target));
    const std::string sample = plain.passage(o.seed, std::max<size_t>(chars, 16));
    LADDER_ASSIGN_OR_RETURN(int64_t tokens, counted(sample));
    if (tokens > 0) ratio = static_cast<double>(sample.size()) / static_cast<double>(tokens);
  }
  constexpr int kMaxRounds = 6;
  const int64_t room = o.context > 0 ? o.context - o.max_tokens : std::numeric_limits<int64_t>::max();
  for (int round = 1; round <= kMaxRounds; ++round) {
    fit->rounds = round;
    fit->chars_per_token = ratio;
    TextSynthesizer synth(corpus, ratio);
    LADDER_ASSIGN_OR_RETURN(std::vector<WorkloadRequest> reqs, generate_workload(o, synth));
    // The first few prompts steer the ratio; all are measured once it holds.
    const size_t sample = std::min<size_t>(reqs.size(), 4);
    std::vector<int64_t> tokens;
    bool too_long = false;
    auto measure = [&](size_t from, size_t to) -> Status {
      for (size_t i = from; i < to && !too_long; ++i) {
        auto n = counted(reqs[i].prompt);
        if (!n.is_ok()) {
          // An oversize prompt is refused (HTTP 400): shorter next round.
          if (n.status().message().find("HTTP 400") == std::string::npos) return n.status();
          too_long = true;
        } else {
          tokens.push_back(*n);
        }
      }
      return Status::ok();
    };
    auto mean_of = [&] {
      double m = 0;
      for (int64_t t : tokens) m += static_cast<double>(t);
      return m / static_cast<double>(tokens.size());
    };
    LADDER_RETURN_IF_ERROR(measure(0, sample));
    if (too_long) {
      ratio *= 0.9;
      continue;
    }
    // Chars per token = chars / tokens: more tokens than wanted -> fewer characters each.
    const double sampled = mean_of();
    if (std::abs(sampled - static_cast<double>(target)) > 0.02 * static_cast<double>(target)) {
      ratio *= static_cast<double>(target) / sampled;
      continue;
    }
    LADDER_RETURN_IF_ERROR(measure(sample, reqs.size()));
    if (too_long) {
      ratio *= 0.9;
      continue;
    }
    fit->mean_tokens = mean_of();
    fit->min_tokens = *std::min_element(tokens.begin(), tokens.end());
    fit->max_tokens = *std::max_element(tokens.begin(), tokens.end());
    if (fit->max_tokens > room) {
      ratio *= static_cast<double>(room) / static_cast<double>(fit->max_tokens) * 0.99;
      continue;
    }
    return reqs;
  }
  return failed_precondition(fmt::format("could not fit the prompts to {} tokens with room for max_tokens {} in the "
                                         "served context of {} (last round: {} to {} tokens); lower --fill",
                                         target, o.max_tokens, o.context, fit->min_tokens, fit->max_tokens));
}

}  // namespace ladder::harness
