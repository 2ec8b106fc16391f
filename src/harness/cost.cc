#include "harness/cost.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace ladder::harness {

CostSummary summarize_cost(const ReplayRun& run, const GroupSummary& overall, const Prices& prices) {
  CostSummary c;
  c.verified = overall.verified;
  c.verified_output_tokens = overall.verified_output_tokens;
  std::vector<std::string> notes;
  if (run.server_cpu_before_s && run.server_cpu_after_s) {
    c.server_core_s = *run.server_cpu_after_s - *run.server_cpu_before_s;
    if (c.verified > 0) c.core_s_per_verified_request = *c.server_core_s / static_cast<double>(c.verified);
    if (c.verified_output_tokens > 0) {
      c.core_s_per_1k_verified_output_tokens = *c.server_core_s * 1000.0 / static_cast<double>(c.verified_output_tokens);
    }
  } else {
    notes.push_back("the server's /metrics has no process_cpu_seconds_total: no core-seconds");
  }
  if (run.shadow_cpu_before_s && run.shadow_cpu_after_s) {
    c.shadow_core_s = *run.shadow_cpu_after_s - *run.shadow_cpu_before_s;
    if (c.verified > 0) c.shadow_core_s_per_verified_request = *c.shadow_core_s / static_cast<double>(c.verified);
  }
  if (prices.any()) {
    for (const auto& r : run.results) {
      if (r.prompt_tokens > 0) c.billed_input_tokens += r.prompt_tokens;
      if (r.output_tokens > 0) c.billed_output_tokens += r.output_tokens;
    }
    c.price_total = (static_cast<double>(c.billed_input_tokens) * prices.input_per_million.value_or(0) +
                     static_cast<double>(c.billed_output_tokens) * prices.output_per_million.value_or(0)) /
                    1e6;
    if (c.verified > 0) c.price_per_verified_request = *c.price_total / static_cast<double>(c.verified);
    if (c.verified_output_tokens > 0) {
      c.price_per_1k_verified_output_tokens = *c.price_total * 1000.0 / static_cast<double>(c.verified_output_tokens);
    }
  }
  if (c.verified == 0) notes.push_back("no request verified: no cost per verified task");
  for (size_t i = 0; i < notes.size(); ++i) c.note += (i ? "; " : "") + notes[i];
  return c;
}

nlohmann::json to_json(const CostSummary& c) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"verified_requests", c.verified},
          {"verified_output_tokens", c.verified_output_tokens},
          {"server_core_s", opt(c.server_core_s)},
          {"core_s_per_verified_request", opt(c.core_s_per_verified_request)},
          {"core_s_per_1k_verified_output_tokens", opt(c.core_s_per_1k_verified_output_tokens)},
          {"shadow_core_s", opt(c.shadow_core_s)},
          {"shadow_core_s_per_verified_request", opt(c.shadow_core_s_per_verified_request)},
          {"billed_input_tokens", c.billed_input_tokens},
          {"billed_output_tokens", c.billed_output_tokens},
          {"price_total", opt(c.price_total)},
          {"price_per_verified_request", opt(c.price_per_verified_request)},
          {"price_per_1k_verified_output_tokens", opt(c.price_per_1k_verified_output_tokens)},
          {"note", c.note}};
}

std::string cost_line(const CostSummary& c) {
  std::vector<std::string> parts;
  if (c.server_core_s) parts.push_back(fmt::format("server CPU {:.3f} core-s", *c.server_core_s));
  if (c.shadow_core_s) {
    parts.push_back(fmt::format("of which shadow verification {:.3f} core-s", *c.shadow_core_s));
  }
  if (c.core_s_per_verified_request) parts.push_back(fmt::format("{:.4g} core-s per verified request", *c.core_s_per_verified_request));
  if (c.core_s_per_1k_verified_output_tokens) {
    parts.push_back(fmt::format("{:.4g} core-s per 1k verified output tokens", *c.core_s_per_1k_verified_output_tokens));
  }
  if (c.price_total) parts.push_back(fmt::format("price {:.6g} total", *c.price_total));
  if (c.price_per_verified_request) parts.push_back(fmt::format("{:.6g} per verified request", *c.price_per_verified_request));
  if (c.price_per_1k_verified_output_tokens) {
    parts.push_back(fmt::format("{:.6g} per 1k verified output tokens", *c.price_per_1k_verified_output_tokens));
  }
  std::string out = "cost:";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : " ") + parts[i];
  if (!c.note.empty()) out += (parts.empty() ? " " : " (") + c.note + (parts.empty() ? "" : ")");
  return out;
}

}  // namespace ladder::harness
