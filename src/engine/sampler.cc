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
      logits[t] = logits[t] > 0.0f ? logits[t] / params.repetition_penalty : logits[t] * params.repetition_penalty;
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

double Sampler::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

SampledToken Sampler::sample(std::span<const float> logits, std::span<const int32_t> prompt,
                             std::span<const int32_t> output) {
  LADDER_CHECK(!logits.empty(), "sample() of an empty logits row");
  const size_t n_vocab = logits.size();
  work_.assign(logits.begin(), logits.end());
  apply_penalties(params_, prompt, output, work_);

  SampledToken result;
  const double log_z = log_sum_exp(work_);
  auto logprob = [&](int32_t t) { return static_cast<float>(static_cast<double>(work_[static_cast<size_t>(t)]) - log_z); };
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

  // Candidates: the top-k (sorted, most likely first) or the whole vocabulary
  // in id order. Sorting 32k+ ids per token is costly, so the vocabulary is
  // sorted only as far as top-p needs. The draw walks the candidates in their
  // order, which makes a seeded result depend on the order only, never on
  // timing. Temperature is applied in the weights, so work_ keeps the
  // penalised logits that logprobs are read from.
  const MoreLikely more_likely{work_};
  order_.resize(n_vocab);
  for (size_t i = 0; i < n_vocab; ++i) order_[i] = static_cast<int32_t>(i);
  size_t n_cand = n_vocab;
  size_t n_sorted = 0;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n_vocab) {
    n_cand = static_cast<size_t>(params_.top_k);
    std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(n_cand), order_.end(),
                      more_likely);
    n_sorted = n_cand;
  }
  // Weights relative to the most likely token (which is always a candidate):
  // w = exp((x - max) / T), so w_max = 1.
  const double mx = *std::max_element(work_.begin(), work_.end());
  const double inv_t = 1.0 / static_cast<double>(params_.temperature);
  auto weight = [&](int32_t t) {
    return std::exp((static_cast<double>(work_[static_cast<size_t>(t)]) - mx) * inv_t);
  };
  double z = 0.0;
  for (size_t i = 0; i < n_cand; ++i) z += weight(order_[i]);

  // top-p: the shortest most-likely prefix whose mass reaches top_p (at least
  // one token); sorts a short prefix first and the rest only when needed.
  if (params_.top_p < 1.0f) {
    const double target = static_cast<double>(params_.top_p) * z;
    double cum = 0.0;
    size_t i = 0;
    while (true) {
      if (i == n_sorted) {
        const size_t grow = n_sorted == 0 ? std::min<size_t>(n_cand, 256) : n_cand;
        std::partial_sort(order_.begin() + static_cast<std::ptrdiff_t>(n_sorted),
                          order_.begin() + static_cast<std::ptrdiff_t>(grow),
                          order_.begin() + static_cast<std::ptrdiff_t>(n_cand), more_likely);
        n_sorted = grow;
      }
      cum += weight(order_[i++]);
      if (cum >= target || i == n_cand) break;
    }
    n_cand = std::max<size_t>(i, 1);
  }

  probs_.resize(n_cand);
  size_t n_keep = 0;
  for (size_t i = 0; i < n_cand; ++i) {
    const double w = weight(order_[i]);
    // min-p: p >= min_p * p_max  <=>  w >= min_p, as w_max = 1.
    if (params_.min_p > 0.0f && w < static_cast<double>(params_.min_p)) continue;
    order_[n_keep] = order_[i];
    probs_[n_keep++] = w;
  }
  LADDER_CHECK(n_keep > 0, "sampling truncation dropped every token");

  double mass = 0.0;
  for (size_t i = 0; i < n_keep; ++i) mass += probs_[i];
  const double u = uniform() * mass;
  double cum = 0.0;
  size_t pick = n_keep - 1;  // rounding can leave u just above the last sum
  for (size_t i = 0; i < n_keep; ++i) {
    cum += probs_[i];
    if (u < cum) {
      pick = i;
      break;
    }
  }
  result.token = order_[pick];
  result.logprob = logprob(result.token);
  return result;
}

}  // namespace ladder::engine
