// What a replay leaves behind: record.json (schema-versioned, DESIGN.md
// "Record"), requests.jsonl (every measured request) and the terminal summary.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/cost.h"
#include "harness/quality_summary.h"
#include "harness/replay.h"
#include "harness/stats.h"

namespace ladder::harness {

// 2: outcomes (late / rejected early / expired / errors), quality against a
// reference, cost per verified task, verified-completion latency, the
// server's effective configuration in the fingerprint.
inline constexpr int kRecordSchemaVersion = 2;

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
  QualityReport quality;  // empty without a reference
  CostSummary cost;
};

// Requests that did not get served, grouped by what the server (or the
// network) said: outcome, HTTP status and error code (the message of the
// first one stands for the group), or the message when there is no code.
struct FailureGroup {
  std::string outcome;  // error | rejected_early | expired
  int http_status = 0;
  std::string code;
  std::string message;
  size_t count = 0;
  size_t first_index = 0;  // first request with it (schedule order)
  int first_line = 0;      // its workload line (0: generated)
};
std::vector<FailureGroup> failure_groups(const std::vector<RequestResult>& results);

// The SLOs the requests were measured against, per slice: "ttft 500 ms, e2e 4000 ms"
// (several when a slice's requests differ); "none" when a slice has none.
std::map<std::string, std::vector<std::string>> slos_by_slice(const std::vector<RequestResult>& results);

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

}  // namespace ladder::harness
