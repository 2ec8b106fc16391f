#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "common/check.h"

namespace ladder::engine {
namespace {

// Most likely first; equal logits go to the lower id so results never depend
// on the sort's stability.
struct MoreLikely {
  std::span<const float> x;
  bool operator()(int32_t a, int32_t b) const {
    const float xa = x[static_cast<size_t>(a)];
    const float xb = x[static_cast<size_t>(b)];
    return xa != xb ? xa > xb : a < b;
  }
};

}  // namespace

double log_sum_exp(std::span<const float> x) {
  LADDER_CHECK(!x.empty(), "log_sum_exp of an empty row");
  const float mx = *std::max_element(x.begin(), x.end());
  double sum = 0.0;
  for (float v : x) sum += static_cast<double>(std::exp(v - mx));
  return static_cast<double>(mx) + std::log(sum);
}

void apply_penalties(const SamplingParams& params, std::span<const int32_t> prompt,
                     std::span<const int32_t> output, std::span<float> logits) {
  const auto n_vocab = static_cast<int64_t>(logits.size());
  auto in_vocab = [&](int32_t t) { return t >= 0 && t < n_vocab; };
  if (params.repetition_penalty != 1.0f) {
    std::vector<bool> seen(logits.size(), false);
    auto mark = [&](std::span<const int32_t> ts) {
      for (int32_t t : ts) {
        if (in_vocab(t)) seen[static_cast<size_t>(t)] = true;
      }
    };
    mark(prompt);
    mark(output);
    for (size_t t = 0; t < logits.size(); ++t) {
      if (!seen[t]) continue;
      logits[t] =
          logits[t] > 0.0f ? logits[t] / params.repetition_penalty : logits[t] * params.repetition_penalty;
    }
  }
  if (params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f) {
    std::unordered_map<int32_t, int64_t> counts;
    for (int32_t t : output) {
      if (in_vocab(t)) ++counts[t];
    }
    for (const auto& [t, c] : counts) {
      logits[static_cast<size_t>(t)] -=
          params.presence_penalty + params.frequency_penalty * static_cast<float>(c);
    }
  }
}

Sampler::Sampler(const SamplingParams& params, uint64_t seed) : params_(params), rng_(seed) {
  LADDER_CHECK(params_.validate().is_ok(), "Sampler built from invalid SamplingParams");
}

double Sampler::uniform() {
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

SampledToken Sampler::sample(std::span<const float> logits, std::span<const int32_t> prompt,
                             std::span<const int32_t> output) {
  LADDER_CHECK(!logits.empty(), "sample() of an empty logits row");
  const size_t n_vocab = logits.size();
  work_.assign(logits.begin(), logits.end());
  apply_penalties(params_, prompt, output, work_);

  SampledToken result;
  const double log_z = log_sum_exp(work_);
  auto logprob = [&](int32_t t) {
    return static_cast<float>(static_cast<double>(work_[static_cast<size_t>(t)]) - log_z);
  };
  if (params_.top_logprobs > 0) {
    const size_t n = std::min(static_cast<size_t>(params_.top_logprobs), n_vocab);
    order_.resize(n_vocab);
    for (size_t i = 0; i < n_vocab; ++i) order_[i] = static_cast<int32_t>(i);
    std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(n), order_.end(),
                      MoreLikely{work_});
    for (size_t i = 0; i < n; ++i) {
      result.top.push_back({order_[i], logprob(order_[i])});
    }
  }

  if (params_.greedy()) {
    size_t best = 0;
    for (size_t i = 1; i < n_vocab; ++i) {
      if (work_[i] > work_[best]) best = i;  // strict: ties keep the lower id
    }
    result.token = static_cast<int32_t>(best);
    result.logprob = logprob(static_cast<int32_t>(best));
    return result;
  }

  // Candidates are (weight, id) pairs with w = exp((x - max) / T), so the most
  // likely token has w = 1. Truncation uses selection, not a sort of the
  // vocabulary: top-k is one nth_element, top-p halves the range with
  // nth_element until the boundary is found, so both are O(n_vocab). Work_
  // keeps the penalised logits that logprobs are read from.
  const float mx = *std::max_element(work_.begin(), work_.end());
  const float inv_t = 1.0f / params_.temperature;
  cand_.resize(n_vocab);
  for (size_t i = 0; i < n_vocab; ++i)
    cand_[i] = {std::exp((work_[i] - mx) * inv_t), static_cast<int32_t>(i)};
  // More likely first; equal weights go to the lower id.
  auto heavier = [](const Candidate& a, const Candidate& b) { return a.w != b.w ? a.w > b.w : a.id < b.id; };
  auto begin = cand_.begin();
  size_t n_cand = n_vocab;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n_vocab) {
    n_cand = static_cast<size_t>(params_.top_k);
    std::nth_element(begin, begin + static_cast<std::ptrdiff_t>(n_cand), cand_.end(), heavier);
  }
  auto mass_of = [&](size_t from, size_t to) {
    double m = 0.0;
    for (size_t i = from; i < to; ++i) m += cand_[i].w;
    return m;
  };

  // top-p: the smallest most-likely set whose mass reaches top_p (at least one
  // token). Invariant: [0, lo) is in the set, heavier than [lo, hi), which is
  // heavier than [hi, n_cand); the boundary lies in [lo, hi).
  if (params_.top_p < 1.0f) {
    const double target = static_cast<double>(params_.top_p) * mass_of(0, n_cand);
    size_t lo = 0, hi = n_cand;
    double acc = 0.0;
    while (hi - lo > 64) {
      const size_t mid = lo + (hi - lo) / 2;
      std::nth_element(begin + static_cast<std::ptrdiff_t>(lo), begin + static_cast<std::ptrdiff_t>(mid),
                       begin + static_cast<std::ptrdiff_t>(hi), heavier);
      const double m = mass_of(lo, mid);
      if (acc + m >= target) {
        hi = mid;
      } else {
        acc += m;
        lo = mid;
      }
    }
    std::sort(begin + static_cast<std::ptrdiff_t>(lo), begin + static_cast<std::ptrdiff_t>(hi), heavier);
    size_t i = lo;
    while (i < hi) {
      acc += cand_[i++].w;
      if (acc >= target) break;
    }
    n_cand = std::max<size_t>(i, 1);
  }

  // min-p: p >= min_p * p_max  <=>  w >= min_p, as w_max = 1.
  size_t n_keep = 0;
  for (size_t i = 0; i < n_cand; ++i) {
    if (params_.min_p > 0.0f && cand_[i].w < params_.min_p) continue;
    cand_[n_keep++] = cand_[i];
  }
  LADDER_CHECK(n_keep > 0, "sampling truncation dropped every token");

  // The draw walks the survivors in their array order, which selection fixes
  // deterministically: a seeded request repeats exactly.
  const double u = uniform() * mass_of(0, n_keep);
  double cum = 0.0;
  size_t pick = n_keep - 1;  // rounding can leave u just above the last sum
  for (size_t i = 0; i < n_keep; ++i) {
    cum += cand_[i].w;
    if (u < cum) {
      pick = i;
      break;
    }
  }
  result.token = cand_[pick].id;
  result.logprob = logprob(result.token);
  return result;
}

}  // namespace ladder::engine
