// Aggregates of per-request results: latency distributions and goodput,
// overall, per tenant and per slice, and the sweep's max goodput rate.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "harness/request_result.h"

namespace ladder::harness {

// Linear interpolation between closest ranks (numpy's default): the value at
// rank p/100 * (n - 1) of the sorted samples. p in [0, 100]; n >= 1.
double percentile_sorted(const std::vector<double>& sorted, double p);

struct Distribution {
  size_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};
Distribution summarize(std::vector<double> values);

// Speculative decoding totals over the requests whose usage reported them.
struct SpeculativeSummary {
  size_t requests = 0;          // requests that reported any speculative field
  int64_t proposed = 0;         // draft tokens proposed (ladder_speculative, else accepted + rejected)
  int64_t accepted = 0;         // draft tokens accepted
  int64_t cycles = 0;           // target verification passes (ladder_speculative only)
  int64_t accepted_in_cycles = 0;  // accepted draft tokens of the requests that report cycles
  std::optional<double> accepted_rate;     // accepted / proposed
  std::optional<double> tokens_per_cycle;  // (accepted + cycles) / cycles: each pass emits its accepted drafts + one
};

struct GroupSummary {
  size_t requests = 0;
  size_t completed = 0;  // HTTP 200 and a finish_reason
  size_t verified = 0;
  size_t slo_met = 0;    // within every SLO (verification aside)
  size_t good = 0;       // verified and within every SLO
  // Outcomes (request_result.h): good + late + unverified + rejected_early + expired + errors = requests.
  size_t late = 0;
  size_t unverified = 0;
  size_t rejected_early = 0;
  size_t expired = 0;
  size_t errors = 0;
  double goodput_rps = 0;       // good / window
  double goodput_fraction = 0;  // good / requests (= the SLO attainment the sweep uses)
  int64_t output_tokens = 0;    // sum of usage.completion_tokens
  double output_tokens_per_s = 0;
  int64_t verified_output_tokens = 0;
  int64_t prompt_tokens = 0;    // sum of usage.prompt_tokens
  Distribution ttft_ms, ttfat_ms, tpot_ms, itl_ms, e2e_ms, send_lag_ms;
  Distribution verified_e2e_ms;  // verified-completion latency: E2E of verified requests only
  SpeculativeSummary speculative;
};

// window_s: the measurement window the rates are taken over (> 0).
GroupSummary summarize_group(const std::vector<const RequestResult*>& results, double window_s);

struct RunSummary {
  double window_s = 0;
  GroupSummary overall;
  std::map<std::string, GroupSummary> by_tenant;
  std::map<std::string, GroupSummary> by_slice;
};
RunSummary summarize_run(const std::vector<RequestResult>& results, double window_s);

struct SweepPoint {
  double offered_rate = 0;  // requests per second offered
  double attainment = 0;    // goodput fraction at that rate
  double goodput_rps = 0;
};
struct SweepVerdict {
  // The highest measured rate such that it and every lower measured rate meet
  // the target (a noisy pass above a failure does not count).
  std::optional<double> max_rate;
  // Between max_rate and the next (failing) rate, where the straight line
  // between their attainments crosses the target; none when no rate failed.
  std::optional<double> interpolated_rate;
  // A rate failed: the limit lies between max_rate and it. False when even
  // the highest swept rate met the target (the limit is "not reached below"
  // max_rate) or when no rate did.
  bool limit_found = false;
  double highest_rate = 0;  // the highest swept rate
  double lowest_rate = 0;   // the lowest swept rate

  // "8.5 arrivals/s (measured 8, interpolated 8.5)", "not reached below 16
  // arrivals/s (the highest swept rate still met the target)", "not met at
  // any swept rate (lowest 0.5 arrivals/s)".
  std::string statement() const;
  nlohmann::json to_json(double target) const;
};
SweepVerdict find_max_goodput_rate(std::vector<SweepPoint> points, double target);

// The latency columns of the summary tables (terminal and report), in order:
// TTFT p50/p90/p99, TTFAT p50, TPOT p50/p99, E2E p50/p99, verified E2E
// p50/p90/p95/p99, send lag max; a value is absent when no request had one.
struct LatencyColumn {
  const char* short_name;  // "ttft50"
  const char* long_name;   // "TTFT p50"
  std::optional<double> value;
};
std::vector<LatencyColumn> latency_columns(const GroupSummary& g);

nlohmann::json to_json(const Distribution& d);
nlohmann::json to_json(const SpeculativeSummary& s);
nlohmann::json to_json(const GroupSummary& g);
nlohmann::json to_json(const RunSummary& s);

}  // namespace ladder::harness
