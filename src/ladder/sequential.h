// The sequential comparison: how many paired runs the gate asks for, in what
// order they run, and when it may stop.
//
// Order. Runs come in blocks of four per workload: A B B A in even blocks,
// B A A B in odd ones (0-based), pairing the first A with the first B and the
// second with the second. Within a block each side holds positions that sum
// to the same total, so a drift that is linear over the block (a machine
// warming up or a neighbour's job ramping) cancels, and no side always goes
// first. Every run's order is recorded (PairedRun::a_first).
//
// Stopping rule. The gate looks when every workload has completed the
// planned number of repeats: min_repeats, then doubling, up to max_repeats
// (always a look). At each look it makes the run-level interval
// (run_level.h) at that look's share of the one-sided error rate alpha =
// (1 - confidence) / 2, and stops with a promotion when the interval's lower
// bound is above min_gain, or with a rejection when its upper bound is at or
// below it; otherwise it pairs another block. The shares are a weighted
// Bonferroni split over the K planned looks: 1/(K+1) of alpha at each look
// before the last and 2/(K+1) at the last, so the chance of any false
// promotion over all looks is at most alpha whatever the correlation between
// looks (no normal approximation of the looks' joint distribution is
// needed), at the cost of some power against an exact alpha-spending
// boundary. A look may decide only with at least ceil(log2(1 / its alpha))
// runs: no set of m runs is stronger evidence than all m agreeing in sign,
// which an exact sign test puts at 2^-m.
//
// A time budget (max_seconds) ends the pairing early: the gate then takes
// one last look with what it has, in place of a planned one (still at most K
// looks, so the bound holds).
#pragma once

#include <vector>

#include "common/status.h"
#include "ladder/run_level.h"

namespace ladder::climb {

struct SequentialPlan {
  std::vector<int> looks;  // repeats per workload at each look; ascending and even, the last is max_repeats
  double confidence = 0.95;

  // One-sided error rate of a promotion over every look.
  double alpha() const { return (1 - confidence) / 2; }
  // Its share at look `i` (0-based).
  double alpha_at(size_t i) const;
  int max_repeats() const { return looks.back(); }

  // Looks at min_repeats, 2 min_repeats, 4 min_repeats, ... and max_repeats;
  // both even and min_repeats <= max_repeats.
  static Result<SequentialPlan> make(int min_repeats, int max_repeats, double confidence);
};

// "ABBA" (even blocks) or "BAAB" (odd), 0-based.
const char* block_order(int block);

class SequentialGate {
 public:
  SequentialGate(SequentialPlan plan, double min_gain) : plan_(std::move(plan)), min_gain_(min_gain) {}

  void add(const PairedRun& run) { runs_.push_back(run); }

  // Called after each block with the repeats every workload has completed:
  // looks when they reach the next planned look, or now when the budget is
  // spent. Returns true when the comparison is over (decided, or every
  // look taken).
  bool after_block(int repeats, bool budget_spent);

  // The latest look's interval and verdict (kUndecided before the first).
  const GoodputInterval& interval() const { return interval_; }
  Verdict verdict() const { return interval_.verdict; }
  int looks_taken() const { return next_look_; }
  const std::vector<PairedRun>& runs() const { return runs_; }
  const SequentialPlan& plan() const { return plan_; }

 private:
  SequentialPlan plan_;
  double min_gain_;
  std::vector<PairedRun> runs_;
  int next_look_ = 0;
  GoodputInterval interval_;
};

}  // namespace ladder::climb
