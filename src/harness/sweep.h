// `ladder replay --sweep auto`: finds the max goodput rate without a list of
// rates. From a start rate it doubles while the SLO attainment stays at or
// above the target; once a rate falls below it, it bisects between the last
// rate that met the target and the first that did not, for a set number of
// steps. If the start rate already fails it halves first (a few times at
// most), then bisects. Doubling stops at a ceiling: the verdict then says the
// limit was "not reached below" the highest rate measured.
#pragma once

#include <optional>
#include <vector>

#include "common/status.h"
#include "harness/stats.h"

namespace ladder::harness {

struct AutoSweepOptions {
  double start_rate = 1.0;
  double target = 0.9;
  int bisect_steps = 3;
  double max_rate = 1000.0;  // doubling stops here
  int max_halvings = 6;
};

class AutoSweep {
 public:
  static Result<AutoSweep> create(const AutoSweepOptions& o);

  // The next rate to measure, or nullopt when the search is done.
  std::optional<double> next() const { return next_; }
  // The attainment measured at the rate next() gave.
  void record(double rate, double attainment);

  const std::vector<SweepPoint>& points() const { return points_; }

 private:
  explicit AutoSweep(const AutoSweepOptions& o) : o_(o), next_(o.start_rate) {}

  AutoSweepOptions o_;
  std::optional<double> next_;
  std::optional<double> pass_;  // highest rate that met the target
  std::optional<double> fail_;  // lowest rate that did not
  int halvings_ = 0;
  int bisections_ = 0;
  std::vector<SweepPoint> points_;
};

}  // namespace ladder::harness
