// Live shadow evidence: does the serving configuration still verify against
// rung 1 on the traffic it serves now, slice by slice?
//
// `ladder serve --shadow-rate F` re-runs a sample of live requests on a
// rung-1 reference inside the server (server/shadow.h) and records here
// whether each one verified (exactly, or by the slice's approximate
// thresholds). A slice falls below its margin when its verified fraction's
// upper confidence bound is below the margin the serving configuration was
// promoted under (the ledger entry's "margin"); the server then rolls back.
//
// Statistics. Requests of one burst share its conditions (the same kind of
// prompt arriving together), so single requests are not independent units.
// As the gate's run-level intervals (run_level.h) treat a replay run as the
// unit, a slice's outcomes are grouped into windows of kWindow consecutive
// shadowed requests, and the interval is a one-sided Student t bound over
// the windows' verified fractions: upper = mean + t(alpha_j, m - 1) sd / sqrt(m).
//
// The bound is looked at repeatedly as evidence grows, so each look gets a
// share of the one-sided error rate alpha = (1 - confidence) / 2: look j
// (1-based) happens when the slice has completed 8, 12, 16, 24, 32, 48, ...
// windows (8 and 12 times powers of 2) and spends alpha_j = alpha 6 / (pi^2 j^2);
// the shares sum to alpha over unboundedly many looks, so a slice whose true
// verified fraction is at its margin is rolled back with probability at most
// alpha however long the server runs (tests/ladder/shadow_evidence_test.cc
// measures it on simulated bursty traffic). As in the gate, a look decides
// only with at least min_runs_to_decide(alpha_j) windows. The first look
// comes at 32 shadowed requests of a slice: a slice far below its margin is
// rolled back then.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "harness/verify_policy.h"
#include "ladder/policy.h"

namespace ladder::climb {

// How each slice is verified and the verified fraction it must keep.
struct ShadowRules {
  SliceMargin default_margin;
  std::map<std::string, SliceMargin> slice_margins;
  harness::VerifyPolicy thresholds = harness::VerifyPolicy::built_in();  // approx slices'
  double confidence = 0.95;

  SliceMargin margin_for(const std::string& slice) const;
  // A policy's margins and thresholds (a climb's, or the defaults).
  static ShadowRules from_policy(const ClimbPolicy& policy);
  // The margins a ledger entry was decided under (its "margin" object).
  static Result<ShadowRules> from_ledger_margin(const nlohmann::json& margin);
};

// One shadowed request's verdict.
struct ShadowOutcome {
  std::string slice;
  bool verified = false;
  std::string request_id;  // the response id the client saw
  std::string detail;      // how it differed (first divergence, counts)
};

// Where a slice stands.
struct SliceStanding {
  std::string slice;
  SliceMargin margin;
  int64_t shadowed = 0;
  int64_t verified = 0;
  int64_t windows = 0;  // complete ones
  double fraction = 1;  // verified / shadowed (1 when none)
  // The last look's bound and its one-sided level; before the first look 1 and 0.
  double upper = 1;
  double alpha = 0;
  int looks = 0;
  bool below_margin = false;  // a look put the upper bound below the margin
  std::vector<ShadowOutcome> first_failures;  // the first few that did not verify
};

nlohmann::json to_json(const SliceStanding& s);

// Look j (1-based): the windows it needs and its share of alpha.
int64_t shadow_look_windows(int j);
double shadow_look_alpha(double alpha, int j);

class ShadowEvidence {
 public:
  static constexpr int kWindow = 4;           // shadowed requests per window
  static constexpr size_t kKeptFailures = 4;  // first failures kept per slice
  static constexpr size_t kMaxSlices = 32;    // slices judged apart; later names count as "other"

  explicit ShadowEvidence(ShadowRules rules) : rules_(std::move(rules)) {}

  // Adds one outcome; returns the slice's standing when a look now puts it
  // below its margin (once per slice: a slice below stays below).
  std::optional<SliceStanding> record(const ShadowOutcome& outcome);
  std::vector<SliceStanding> standings() const;
  // The slice an outcome named `slice` is judged and counted in: its own, or
  // "other" once kMaxSlices others are tracked (names come from clients).
  std::string slice_key(const std::string& slice) const;
  const ShadowRules& rules() const { return rules_; }
  // Forgets every outcome (a new configuration serves).
  void reset() { slices_.clear(); }

 private:
  struct Slice {
    SliceStanding standing;
    std::vector<double> window_fractions;
    int in_window = 0;
    int in_window_verified = 0;
  };
  // Takes the look due at this many windows, if one is.
  void look(Slice& s) const;

  ShadowRules rules_;
  std::map<std::string, Slice> slices_;
};

}  // namespace ladder::climb
