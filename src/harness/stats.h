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

struct GroupSummary {
  size_t requests = 0;
  size_t completed = 0;  // HTTP 200 and a finish_reason
  size_t verified = 0;
  size_t slo_met = 0;    // within every SLO (verification aside)
  size_t good = 0;       // verified and within every SLO
  double goodput_rps = 0;       // good / window
  double goodput_fraction = 0;  // good / requests (= the SLO attainment the sweep uses)
  int64_t output_tokens = 0;    // sum of usage.completion_tokens
  double output_tokens_per_s = 0;
  Distribution ttft_ms, ttfat_ms, tpot_ms, itl_ms, e2e_ms, send_lag_ms;
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
  // between their attainments crosses the target.
  std::optional<double> interpolated_rate;
};
SweepVerdict find_max_goodput_rate(std::vector<SweepPoint> points, double target);

nlohmann::json to_json(const Distribution& d);
nlohmann::json to_json(const GroupSummary& g);
nlohmann::json to_json(const RunSummary& s);

}  // namespace ladder::harness
