#include "ops/paired_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace ladder::ops {

double median(std::vector<double> v) {
  LADDER_CHECK(!v.empty(), "the median of nothing");
  const size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2), v.end());
  const double hi = v[n / 2];
  if (n % 2 == 1) return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n / 2)));
}

PairedChoice choose_against_baseline(const std::vector<std::vector<std::vector<double>>>& seconds,
                                     const PairedChoiceRule& rule) {
  LADDER_CHECK(!seconds.empty() && !seconds[0].empty() && !seconds[0][0].empty(),
               "paired choice needs at least one workload, round and candidate");
  const size_t rounds = seconds[0].size(), candidates = seconds[0][0].size();
  for (const auto& w : seconds) {
    LADDER_CHECK(w.size() == rounds, "every workload needs the same rounds");
    for (const auto& r : w) {
      LADDER_CHECK(r.size() == candidates, "every round needs every candidate");
      for (double t : r) LADDER_CHECK(t > 0 && std::isfinite(t), "pass times must be positive");
    }
  }
  PairedChoice out;
  out.rounds = static_cast<int>(rounds);
  out.speedup.assign(candidates, 1.0);
  out.wins.assign(candidates, 0);
  const int need_wins = static_cast<int>(std::ceil(rule.min_win_fraction * static_cast<double>(rounds)));
  double best = rule.min_speedup;
  for (size_t c = 1; c < candidates; ++c) {
    std::vector<double> ratio(rounds);
    for (size_t r = 0; r < rounds; ++r) {
      double log_sum = 0;
      for (const auto& w : seconds) log_sum += std::log(w[r][0] / w[r][c]);
      ratio[r] = std::exp(log_sum / static_cast<double>(seconds.size()));
      if (ratio[r] > 1.0) ++out.wins[c];
    }
    out.speedup[c] = median(ratio);
    if (out.speedup[c] >= best && out.wins[c] >= need_wins) {
      best = out.speedup[c];
      out.index = c;
    }
  }
  return out;
}

std::vector<ContestOutcome> run_paired_contests(const std::vector<size_t>& candidates,
                                                const std::vector<PairedContest>& contests,
                                                const PassTimer& time, const PairedProtocol& protocol) {
  using Timings = std::vector<std::vector<std::vector<double>>>;  // [workload][round][candidate]
  size_t most = 0;
  for (size_t n : candidates) {
    LADDER_CHECK(n >= 2, "every workload needs a baseline and a candidate");
    most = std::max(most, n);
  }
  for (const PairedContest& ct : contests) {
    LADDER_CHECK(!ct.workloads.empty(), "a contest needs a workload");
    for (size_t w : ct.workloads) {
      LADDER_CHECK(w < candidates.size() && candidates[w] == candidates[ct.workloads[0]],
                   "a contest's workloads share their candidates");
    }
  }
  const auto screen_rounds = static_cast<size_t>(protocol.screen_rounds);
  const auto confirm_rounds = static_cast<size_t>(protocol.confirm_rounds);
  // The screen, every workload at once.
  Timings screen(candidates.size());
  for (size_t w = 0; w < candidates.size(); ++w) {
    screen[w].assign(screen_rounds, std::vector<double>(candidates[w]));
  }
  for (size_t r = 0; r < screen_rounds; ++r) {
    std::vector<double> first(candidates.size());
    for (size_t w = 0; w < candidates.size(); ++w) first[w] = time(w, 0);
    for (size_t k = 1; k < most; ++k) {
      const size_t c = r % 2 == 0 ? k : most - k;
      for (size_t w = 0; w < candidates.size(); ++w) {
        if (c < candidates[w]) screen[w][r][c] = time(w, c);
      }
    }
    for (size_t w = 0; w < candidates.size(); ++w) screen[w][r][0] = std::sqrt(first[w] * time(w, 0));
  }
  std::vector<ContestOutcome> out(contests.size());
  std::vector<Timings> confirm(contests.size());
  for (size_t k = 0; k < contests.size(); ++k) {
    Timings t;
    for (size_t w : contests[k].workloads) t.push_back(screen[w]);
    out[k].screen = choose_against_baseline(t, kScreenRule);
    out[k].leader = out[k].screen.index;
    confirm[k].assign(contests[k].workloads.size(),
                      std::vector<std::vector<double>>(confirm_rounds, {1.0, 1.0}));
  }
  // The confirmation: the leaders only, interleaved round by round.
  for (size_t r = 0; r < confirm_rounds; ++r) {
    for (size_t k = 0; k < contests.size(); ++k) {
      if (out[k].leader == 0) continue;
      for (int slot = 0; slot < 4; ++slot) {
        const bool outer = slot == 0 || slot == 3;
        const size_t side = outer == (r % 2 == 0) ? 0 : 1;  // A B B A, then B A A B
        for (size_t j = 0; j < contests[k].workloads.size(); ++j) {
          confirm[k][j][r][side] *= time(contests[k].workloads[j], side == 0 ? 0 : out[k].leader);
        }
      }
    }
  }
  for (size_t k = 0; k < contests.size(); ++k) {
    if (out[k].leader == 0) continue;
    for (auto& w : confirm[k]) {
      for (auto& round : w) round = {std::sqrt(round[0]), std::sqrt(round[1])};
    }
    out[k].confirmed = choose_against_baseline(confirm[k], protocol.rule);
    out[k].chosen = out[k].confirmed.index == 1 ? out[k].leader : 0;
  }
  return out;
}

std::string describe_paired_choice(const PairedChoice& choice, const std::vector<std::string>& names) {
  LADDER_CHECK(names.size() == choice.speedup.size(), "one name per candidate");
  std::string out;
  for (size_t c = 1; c < names.size(); ++c) {
    out += fmt::format("{}{} x{:.2f} in {}/{}", c == 1 ? "" : ", ", names[c], choice.speedup[c],
                       choice.wins[c], choice.rounds);
  }
  return out;
}

}  // namespace ladder::ops
