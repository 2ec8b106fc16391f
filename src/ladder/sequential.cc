#include "ladder/sequential.h"

#include <fmt/format.h>

namespace ladder::climb {

double SequentialPlan::alpha_at(size_t i) const {
  const double k = static_cast<double>(looks.size());
  const double share = i + 1 == looks.size() ? 2 / (k + 1) : 1 / (k + 1);
  return alpha() * share;
}

Result<SequentialPlan> SequentialPlan::make(int min_repeats, int max_repeats, double confidence) {
  if (min_repeats < 2 || min_repeats % 2 != 0 || max_repeats % 2 != 0 || max_repeats < min_repeats) {
    return invalid_argument(fmt::format(
        "repeats come in A B B A blocks of two: min_repeats ({}) and max_repeats ({}) must be even, at "
        "least 2, and min_repeats <= max_repeats",
        min_repeats, max_repeats));
  }
  SequentialPlan p;
  p.confidence = confidence;
  for (int r = min_repeats; r < max_repeats; r *= 2) p.looks.push_back(r);
  p.looks.push_back(max_repeats);
  return p;
}

const char* block_order(int block) { return block % 2 == 0 ? "ABBA" : "BAAB"; }

bool SequentialGate::after_block(int repeats, bool budget_spent) {
  if (next_look_ >= static_cast<int>(plan_.looks.size())) return true;
  const bool planned = repeats >= plan_.looks[static_cast<size_t>(next_look_)];
  if (!planned && !budget_spent) return false;
  // A spent budget takes the last look now: the remaining planned looks'
  // shares are the last one's (the final share), never more looks than K.
  const size_t i = budget_spent ? plan_.looks.size() - 1 : static_cast<size_t>(next_look_);
  const double alpha = plan_.alpha_at(i);
  interval_ = run_level_interval(runs_, alpha, min_gain_);
  interval_.confidence = plan_.confidence;
  interval_.repeats = repeats;
  interval_.look = next_look_ + 1;
  interval_.looks_planned = static_cast<int>(plan_.looks.size());
  next_look_ = budget_spent ? static_cast<int>(plan_.looks.size()) : next_look_ + 1;
  return interval_.verdict != Verdict::kUndecided || next_look_ >= static_cast<int>(plan_.looks.size());
}

}  // namespace ladder::climb
