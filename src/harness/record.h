// What a replay leaves behind: record.json (schema-versioned, DESIGN.md
// "Record"), requests.jsonl (every measured request) and the terminal summary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/replay.h"
#include "harness/stats.h"

namespace ladder::harness {

inline constexpr int kRecordSchemaVersion = 1;

struct MachineInfo {
  std::string cpu_model;
  unsigned cores = 0;
  uint64_t memory_bytes = 0;
  std::string hostname;
};
MachineInfo probe_machine();

// One replay at one offered load.
struct RunReport {
  std::string label;
  std::optional<double> nominal_rate;  // --rate / sweep rate, when arrivals were re-drawn
  double offered_rate = 0;             // arrival units per second actually offered
  ReplayRun run;
  RunSummary summary;
};

// offered rate of a scheduled workload: units / span (the span of n arrivals
// drawn at rate R is about n / R, so this recovers R).
double offered_rate_of(const std::vector<WorkloadRequest>& scheduled);

nlohmann::json result_to_json(const RequestResult& r);
nlohmann::json run_to_json(const RunReport& rr);

// Client TTFT minus the server's own TTFT for the requests whose server
// timings carry one (keys "ttft_ms" or "time_to_first_token_ms"): the
// distribution of the difference, and how many requests had both.
nlohmann::json ttft_agreement(const std::vector<RequestResult>& results);

// Characters sent per prompt token the server counted (usage.prompt_tokens):
// the measured counterpart of the synthesizer's stated ratio. 0 when unknown.
double measured_chars_per_token(const std::vector<RequestResult>& results);

std::string iso8601_utc_now();

// A fixed-width table: one row per run overall, then per tenant and per slice.
std::string format_summary_table(const std::vector<RunReport>& runs);

}  // namespace ladder::harness
