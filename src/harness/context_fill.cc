#include "harness/context_fill.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace ladder::harness {

using nlohmann::json;

Result<int64_t> count_prompt_tokens(const Endpoint& ep, const std::string& api_key, const std::string& model,
                                    const std::string& prompt) {
  HttpRequestSpec spec;
  spec.method = "POST";
  spec.path = "/v1/completions";
  spec.api_key = api_key;
  spec.body = json{{"model", model}, {"prompt", prompt}, {"max_tokens", 1}, {"temperature", 0}}.dump();
  spec.timeout_s = 120;
  LADDER_ASSIGN_OR_RETURN(HttpResponse resp, http_fetch(ep, spec));
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
  constexpr int kMaxRounds = 5;
  double ratio = chars_per_token;
  std::vector<WorkloadRequest> best;
  for (int round = 1; round <= kMaxRounds; ++round) {
    TextSynthesizer synth(corpus, ratio);
    LADDER_ASSIGN_OR_RETURN(std::vector<WorkloadRequest> reqs, generate_workload(o, synth));
    auto measured = count(reqs.front().prompt);
    if (!measured.is_ok()) {
      // Too long for the server: shrink and try again (only when it is a size problem).
      if (round < kMaxRounds && measured.status().message().find("HTTP 400") != std::string::npos) {
        ratio *= 0.8;
        continue;
      }
      return measured.status();
    }
    *fit = {target, *measured, ratio, round};
    best = std::move(reqs);
    const double error = std::abs(static_cast<double>(*measured - target)) / static_cast<double>(target);
    if (error <= 0.03 || *measured <= 0) break;
    // Chars per token = chars / tokens: measured too many tokens -> fewer characters per token.
    ratio *= static_cast<double>(target) / static_cast<double>(*measured);
  }
  if (best.empty()) return failed_precondition("could not fit a prompt into the served context");
  if (fit->measured_tokens + o.max_tokens > o.context && o.context > 0) {
    return failed_precondition(fmt::format("the fitted prompt has {} tokens, which with max_tokens {} exceeds the "
                                           "served context of {}; lower --fill",
                                           fit->measured_tokens, o.max_tokens, o.context));
  }
  return best;
}

}  // namespace ladder::harness
