// Cost per verified task (DESIGN.md "Metrics"): the server's CPU
// core-seconds during a run -- the change of its process_cpu_seconds_total
// between right before the first request and right after the last response
// -- per verified request and per 1,000 verified output tokens. For hosted
// providers, whose CPU is not visible, a price per million input and output
// tokens gives money per verified request instead: every request the usage
// reports is billed, verified or not; requests without usage add nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "harness/replay.h"
#include "harness/stats.h"

namespace ladder::harness {

struct Prices {
  std::optional<double> input_per_million;   // --price-in
  std::optional<double> output_per_million;  // --price-out
  bool any() const { return input_per_million || output_per_million; }
};

struct CostSummary {
  size_t verified = 0;
  int64_t verified_output_tokens = 0;
  std::optional<double> server_core_s;  // none: the server exports no process_cpu_seconds_total
  // The part of server_core_s a Ladder server spent on shadow verification
  // (none: it runs none), and per verified request.
  std::optional<double> shadow_core_s;
  std::optional<double> shadow_core_s_per_verified_request;
  std::optional<double> core_s_per_verified_request;
  std::optional<double> core_s_per_1k_verified_output_tokens;
  int64_t billed_input_tokens = 0;
  int64_t billed_output_tokens = 0;
  std::optional<double> price_total;
  std::optional<double> price_per_verified_request;
  std::optional<double> price_per_1k_verified_output_tokens;
  std::string note;  // why a figure is missing
};

CostSummary summarize_cost(const ReplayRun& run, const GroupSummary& overall, const Prices& prices);
nlohmann::json to_json(const CostSummary& c);
// One line for the terminal: "cost: 0.12 core-s per verified request, ...".
std::string cost_line(const CostSummary& c);

}  // namespace ladder::harness
