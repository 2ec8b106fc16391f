// Choosing the fastest of several ways to do the same work from timings
// taken on a noisy, shared machine. The unit of evidence is a round: the
// candidates timed close together, so they share that moment's bandwidth and
// neighbours. A candidate's speed is its time relative to the baseline's
// (candidate 0) in the same round, and the estimate is the median of those
// ratios over the rounds: one quiet moment (the best-of-N estimator this
// replaces picked whichever candidate met one) or one slow pass moves a
// median little.
//
// With many candidates the best median is biased upwards (the winner of ten
// equal candidates is the luckiest), so a choice takes two stages: a screen
// (every candidate, a few rounds) names a leader, and a confirmation (the
// leader against the baseline alone, fresh rounds with each timed twice,
// A B B A) decides. The baseline is left only for a leader whose confirmed
// median beats it by a margin AND that beats it in most rounds;
// tests/ops/paired_choice_test.cc measures the error rates of the whole
// procedure on simulated noisy rounds. Pure: no timing here, no threads.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace ladder::ops {

struct PairedChoiceRule {
  // The median speed-up over the baseline a candidate must reach (1.05: 5%
  // faster). Not smaller: a calibration times one large matrix alone, and
  // on the Zen 5 VM a strategy 2-7% faster there ran 9-15% slower inside
  // the engine (docs/BENCHMARKS.md), so small wins are not trusted.
  double min_speedup = 1.05;
  // The fraction of rounds it must win.
  double min_win_fraction = 0.75;
};

struct PairedChoice {
  size_t index = 0;             // the choice; 0 is the baseline
  std::vector<double> speedup;  // per candidate: median over rounds of baseline time / its time
  std::vector<int> wins;        // per candidate: rounds it beat the baseline
  int rounds = 0;
};

// The median (the mean of the middle two for an even count); checked non-empty.
double median(std::vector<double> values);

// seconds[w][r][c]: one pass over workload w in round r by candidate c
// (candidate 0 is the baseline). A candidate's ratio in a round is the
// geometric mean over workloads of baseline / candidate, so each workload
// counts equally whatever its size. Every workload must have the same
// rounds and candidates (checked); non-positive times are invalid.
PairedChoice choose_against_baseline(const std::vector<std::vector<std::vector<double>>>& seconds,
                                     const PairedChoiceRule& rule = {});

// The screen: the rule that names the leader of many candidates (the best
// median over 1.0, whatever its wins), to be confirmed or not.
inline constexpr PairedChoiceRule kScreenRule{.min_speedup = 1.0, .min_win_fraction = 0.0};

// ---- The protocol: screen, then confirm ----

// Seconds of one pass over workload w by candidate c (0: the baseline).
using PassTimer = std::function<double(size_t workload, size_t candidate)>;

// One choice: workloads that share their candidates (the same count, the
// same meaning) and are judged together.
struct PairedContest {
  std::vector<size_t> workloads;
};

struct PairedProtocol {
  int screen_rounds = 12;
  int confirm_rounds = 24;
  PairedChoiceRule rule;  // for the confirmation
};

struct ContestOutcome {
  PairedChoice screen;     // every candidate over the screen's rounds
  size_t leader = 0;       // the screen's leader; 0 when none beat the baseline
  PairedChoice confirmed;  // [0] the baseline, [1] the leader; no rounds without a leader
  size_t chosen = 0;       // the leader if confirmed, else 0
};

// Runs the two stages on a timer, for every contest at once, and returns
// one outcome per contest. The screen: in each round the baseline of every
// workload runs first and last (the geometric mean of its two passes is
// the round's baseline) and the other candidates between, in an order that
// reverses every round, so a drift within a round favours no candidate.
// The confirmation: each leader and its baseline, A B B A in even rounds and
// B A A B in odd ones, each side's two passes averaged geometrically.
// candidates[w]: how many candidates workload w has (at least 2).
std::vector<ContestOutcome> run_paired_contests(const std::vector<size_t>& candidates,
                                                const std::vector<PairedContest>& contests,
                                                const PassTimer& time, const PairedProtocol& protocol = {});

// "x1.07 in 10/12" per candidate, comma-separated with the given names, for
// logs and `ladder info`.
std::string describe_paired_choice(const PairedChoice& choice, const std::vector<std::string>& names);

}  // namespace ladder::ops
