// The promotion gate: does a candidate configuration pay, beyond the noise,
// without any quality slice falling below its margin?
//
// Goodput. The candidate (B) and the configuration serving now (A) replay the
// same workloads with the same seeds in counterbalanced blocks (A B B A, then
// B A A B; sequential.h). The unit of evidence is a paired run (run_level.h):
// its good-request counts on each side. The estimate is the relative change
// of good requests, gain = (sum b - sum a) / sum a, and its interval is the
// run-level paired t (Fieller) interval at the share of the error rate the
// sequential plan gives the look that decided. Promoted when that look says
// the gain is above min_gain.
//
// Quality. Per slice, the fraction of the candidate's compared requests (those
// the reference holds and the candidate served) that verified, against the
// slice's margin. Never pooled: one slice below its margin rejects.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ladder/run_level.h"

namespace ladder::climb {

struct SliceQuality {
  std::string slice;
  std::string verify;   // "exact" | "approx"
  size_t requests = 0;  // the candidate's requests of this slice, every repeat
  size_t compared = 0;
  size_t verified = 0;
  double margin = 1.0;

  double fraction() const {
    return compared == 0 ? 0.0 : static_cast<double>(verified) / static_cast<double>(compared);
  }
  bool within() const { return compared > 0 && fraction() >= margin; }
};

struct GateDecision {
  bool promote = false;
  std::string reason;  // numbers included: "rejected: slice long verified 0.81 < margin 0.95"
  std::vector<std::string> failed_slices;  // worst first
};

// Quality first (every slice within its margin; the failing ones are named,
// worst first), then goodput: the look's verdict must be "above min_gain".
GateDecision decide(const GoodputInterval& goodput, std::vector<SliceQuality> slices, double min_gain);

// "+4.2%" / "-0.8%" (one decimal, a sign always).
std::string signed_percent(double fraction);

nlohmann::json to_json(const GoodputInterval& g);
nlohmann::json to_json(const SliceQuality& q);

}  // namespace ladder::climb
