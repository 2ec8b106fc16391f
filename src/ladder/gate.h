// The promotion gate: does a candidate configuration pay, beyond the noise,
// without any quality slice falling below its margin?
//
// Goodput. The candidate (B) and the configuration serving now (A) replay the
// same workloads with the same seeds in A B A B order; every request of every
// repeat gives a pair (a, b) of 0/1 "good" outcomes (verified and within every
// SLO). The estimate is the relative change of good requests,
//   gain = (sum b - sum a) / sum a,
// and its confidence interval comes from a two-stage bootstrap that keeps the
// pairs intact: per workload, draw its repeats with replacement, then within
// each drawn repeat draw its requests with replacement; the interval is the
// percentile interval of the resampled mean difference, divided by the
// observed mean of a (a fixed scale, so the sign is the difference's). A gain
// that shows in one repeat only cannot clear the bar: a resample made of the
// other repeats alone is drawn often enough to pull the lower bound down.
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

namespace ladder::climb {

// One request replayed on both sides of one repeat.
struct PairedOutcome {
  bool a_good = false;
  bool b_good = false;
};

// The pairs of one repeat of one workload.
struct PairedRepeat {
  std::vector<PairedOutcome> pairs;
};

// The repeats of one workload (the bootstrap draws repeats within a workload).
struct PairedWorkload {
  std::string name;
  std::vector<PairedRepeat> repeats;
};

struct GoodputInterval {
  size_t pairs = 0;
  int64_t a_good = 0;
  int64_t b_good = 0;
  double gain = 0;    // (b_good - a_good) / a_good; (b_good > 0 ? +inf : 0) when a_good = 0
  double ci_low = 0;  // relative, same scale as gain
  double ci_high = 0;
  double confidence = 0.95;
  int samples = 0;
};

// The bootstrap above, with `samples` resamples from a generator seeded with
// `seed` (std::mt19937_64; indices drawn as (x >> 11) * n >> 53, so the draws
// are the same on every standard library).
GoodputInterval bootstrap_goodput(const std::vector<PairedWorkload>& workloads, double confidence,
                                  int samples, uint64_t seed);

// The same two-stage bootstrap for one configuration's own goodput fraction:
// good[workload][repeat][request].
struct FractionInterval {
  double fraction = 0;
  double ci_low = 0;
  double ci_high = 0;
};
FractionInterval bootstrap_fraction(const std::vector<std::vector<std::vector<bool>>>& good,
                                    double confidence, int samples, uint64_t seed);

// The resampled means of values[workload][repeat][item], sorted: per
// workload its repeats drawn with replacement, within each its items.
std::vector<double> bootstrap_means(const std::vector<std::vector<std::vector<double>>>& values, int samples,
                                    uint64_t seed);

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
// worst first), then goodput: the interval's lower bound must exceed min_gain.
GateDecision decide(const GoodputInterval& goodput, std::vector<SliceQuality> slices, double min_gain);

// "+4.2%" / "-0.8%" (one decimal, a sign always).
std::string signed_percent(double fraction);

nlohmann::json to_json(const GoodputInterval& g);
nlohmann::json to_json(const SliceQuality& q);

}  // namespace ladder::climb
