// Quality against the reference, per slice and per tenant -- never pooled
// into one number, since an approximation that hurts one slice (say, rare
// evidence at long context) hides in an average. Groups are ordered worst
// first: lowest fraction passing, then lowest mean match, then highest mean KL.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "harness/request_result.h"
#include "harness/verify_policy.h"

namespace ladder::harness {

struct QualityGroup {
  std::string kind;  // "slice" | "tenant"
  std::string name;
  size_t requests = 0;  // in the group
  size_t compared = 0;  // with a quality check (served, and the reference had the request)
  size_t passed = 0;
  size_t exact = 0;
  size_t by_token_ids = 0;  // compared by ids (the rest fell back to token texts or text)
  size_t task_checked = 0;
  size_t task_passed = 0;
  size_t history_differs = 0;
  double mean_match = 0;
  double min_match = 1;
  std::optional<int64_t> earliest_divergence;
  std::optional<double> mean_kl;  // mean over requests of their mean KL
  std::optional<double> max_kl;
  std::optional<QualityThresholds> thresholds;  // a slice's, in approx mode

  double pass_fraction() const { return compared == 0 ? 0.0 : static_cast<double>(passed) / static_cast<double>(compared); }
};

// Every slice and every tenant that has requests, each list worst first.
// Empty when no result carries a quality check.
struct QualityReport {
  std::vector<QualityGroup> slices;
  std::vector<QualityGroup> tenants;
  bool empty() const { return slices.empty() && tenants.empty(); }
};
QualityReport summarize_quality(const std::vector<RequestResult>& results, const VerifyPolicy* approx_policy);

// The approx thresholds of each slice, and "7 of 16 compared requests were
// compared by token texts or text, not token ids ..." when some were; empty
// when there is neither.
std::string quality_note(const QualityReport& q);

nlohmann::json to_json(const QualityGroup& g);
nlohmann::json to_json(const QualityReport& q);

}  // namespace ladder::harness
