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

std::vector<float> log_softmax(std::span<const float> x) {
  LADDER_CHECK(!x.empty(), "log_softmax of an empty row");
  const float mx = *std::max_element(x.begin(), x.end());
  double sum = 0.0;
  for (float v : x) sum += std::exp(static_cast<double>(v) - mx);
  const double log_z = static_cast<double>(mx) + std::log(sum);
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = static_cast<float>(static_cast<double>(x[i]) - log_z);
  return out;
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
  const std::vector<float> logprobs = log_softmax(work_);
  if (params_.top_logprobs > 0) {
    const size_t n = std::min(static_cast<size_t>(params_.top_logprobs), n_vocab);
    order_.resize(n_vocab);
    for (size_t i = 0; i < n_vocab; ++i) order_[i] = static_cast<int32_t>(i);
    std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(n), order_.end(),
                      MoreLikely{work_});
    for (size_t i = 0; i < n; ++i) {
      result.top.push_back({order_[i], logprobs[static_cast<size_t>(order_[i])]});
    }
  }

  if (params_.greedy()) {
    size_t best = 0;
    for (size_t i = 1; i < n_vocab; ++i) {
      if (work_[i] > work_[best]) best = i;  // strict: ties keep the lower id
    }
    result.token = static_cast<int32_t>(best);
    result.logprob = logprobs[best];
    return result;
  }

  // Temperature, then candidates most likely first (top-k needs only k sorted).
  for (float& v : work_) v /= params_.temperature;
  order_.resize(n_vocab);
  for (size_t i = 0; i < n_vocab; ++i) order_[i] = static_cast<int32_t>(i);
  size_t n_keep = n_vocab;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n_vocab) {
    n_keep = static_cast<size_t>(params_.top_k);
    std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(n_keep), order_.end(),
                      MoreLikely{work_});
  } else {
    std::sort(order_.begin(), order_.end(), MoreLikely{work_});
  }

  // Softmax over the top-k survivors.
  probs_.resize(n_keep);
  const double mx = work_[static_cast<size_t>(order_[0])];
  double sum = 0.0;
  for (size_t i = 0; i < n_keep; ++i) {
    probs_[i] = std::exp(static_cast<double>(work_[static_cast<size_t>(order_[i])]) - mx);
    sum += probs_[i];
  }
  for (size_t i = 0; i < n_keep; ++i) probs_[i] /= sum;

  // top-p: the shortest prefix whose mass reaches top_p (at least one token).
  if (params_.top_p < 1.0f) {
    double cum = 0.0;
    size_t i = 0;
    while (i < n_keep) {
      cum += probs_[i++];
      if (cum >= static_cast<double>(params_.top_p)) break;
    }
    n_keep = std::max<size_t>(i, 1);
  }
  // min-p: relative to the most likely token; ratios survive renormalisation.
  if (params_.min_p > 0.0f) {
    const double threshold = static_cast<double>(params_.min_p) * probs_[0];
    size_t i = 1;
    while (i < n_keep && probs_[i] >= threshold) ++i;
    n_keep = i;
  }

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
  result.logprob = logprobs[static_cast<size_t>(result.token)];
  return result;
}

}  // namespace ladder::engine
