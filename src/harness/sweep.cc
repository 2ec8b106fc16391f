#include "harness/sweep.h"

#include <algorithm>

namespace ladder::harness {

Result<AutoSweep> AutoSweep::create(const AutoSweepOptions& o) {
  if (!(o.start_rate > 0)) return invalid_argument("--sweep auto needs a start rate > 0 (--rate)");
  if (!(o.target > 0 && o.target <= 1)) return invalid_argument("--target must be in (0, 1]");
  if (o.bisect_steps < 0) return invalid_argument("--sweep-steps must be >= 0");
  if (!(o.max_rate >= o.start_rate)) return invalid_argument("--sweep-max-rate must be >= the start rate");
  if (o.max_halvings < 0) return invalid_argument("halvings must be >= 0");
  return AutoSweep(o);
}

void AutoSweep::record(double rate, double attainment) {
  points_.push_back({rate, attainment, 0});
  if (attainment >= o_.target) {
    pass_ = std::max(pass_.value_or(rate), rate);
  } else {
    fail_ = std::min(fail_.value_or(rate), rate);
  }
  if (!fail_) {
    // Still meeting the target: double, up to the ceiling.
    next_ = rate * 2 <= o_.max_rate ? std::optional<double>(rate * 2) : std::nullopt;
    return;
  }
  if (!pass_ || *pass_ > *fail_) {
    // Nothing below the failure has passed yet (or a noisy pass above it):
    // look lower.
    if (halvings_ >= o_.max_halvings) {
      next_ = std::nullopt;
      return;
    }
    ++halvings_;
    next_ = *fail_ / 2;
    return;
  }
  if (bisections_ >= o_.bisect_steps) {
    next_ = std::nullopt;
    return;
  }
  ++bisections_;
  next_ = (*pass_ + *fail_) / 2;
}

}  // namespace ladder::harness
