// Per-slice thresholds for `ladder replay --verify approx`, from a TOML
// policy file and/or flags:
//
//   # every slice starts from [default]; a [slice.NAME] table overrides it
//   # field by field
//   [default]
//   min_match = 0.9        # fraction of matching tokens
//   max_mean_kl = 0.05     # nats, mean over compared positions
//   [slice.rare]
//   min_match = 1.0
//   min_divergence = 32    # first divergence no earlier than this position
//   max_kl = 2.0           # nats, worst single position
//
// Without a file and flags the default is min_match 0.9 and max_mean_kl 0.05.
// A request's workload expectation (expected span) is always checked too.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "harness/quality.h"

namespace ladder::harness {

struct VerifyPolicy {
  QualityThresholds defaults;
  std::map<std::string, QualityThresholds> slices;  // field by field over defaults
  std::string source;  // the file it came from, or "built-in defaults" / "flags"

  // The built-in default thresholds.
  static VerifyPolicy built_in();

  QualityThresholds for_slice(const std::string& slice) const;
  nlohmann::json to_json() const;
};

// Parses a policy; an unknown table or key, a wrong type or a value outside
// its range (fractions in [0, 1], KL >= 0, divergence >= 0) is an error that
// names it. The result starts from the built-in defaults.
Result<VerifyPolicy> parse_verify_policy(const std::string& toml_text, const std::string& source);
Result<VerifyPolicy> load_verify_policy(const std::string& path);

// Field by field: what `over` sets replaces `base`.
QualityThresholds overlay(QualityThresholds base, const QualityThresholds& over);

}  // namespace ladder::harness
