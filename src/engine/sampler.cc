#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "common/check.h"
#include "ops/elementwise.h"

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
  for (const auto& [t, bias] : params.logit_bias) {
    if (in_vocab(t)) logits[static_cast<size_t>(t)] += bias;
  }
  if (static_cast<int64_t>(output.size()) < params.min_tokens) {
    for (int32_t t : params.banned_before_min) {
      if (in_vocab(t)) logits[static_cast<size_t>(t)] = -std::numeric_limits<float>::infinity();
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
  // The most likely token (ties to the lower id) and the normaliser, from one
  // SIMD softmax at temperature 1: log Z = x_best - log p_best, accurate for
  // every token (log p itself would underflow in the tail).
  size_t best = 0;
  for (size_t i = 1; i < n_vocab; ++i) {
    if (work_[i] > work_[best]) best = i;  // strict: ties keep the lower id
  }
  probs_.assign(work_.begin(), work_.end());
  ops::softmax(probs_.data(), static_cast<int64_t>(n_vocab));
  const double log_z = static_cast<double>(work_[best]) - std::log(static_cast<double>(probs_[best]));
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
      // Tokens a constraint ruled out (logit -inf) are not alternatives.
      if (std::isinf(work_[static_cast<size_t>(order_[i])])) break;
      result.top.push_back({order_[i], logprob(order_[i])});
    }
  }

  if (params_.greedy()) {
    result.token = static_cast<int32_t>(best);
    result.logprob = logprob(static_cast<int32_t>(best));
    return result;
  }

  // Candidates are (weight, id) pairs, w proportional to exp(x / T).
  // Truncation uses selection, not a sort of the vocabulary: top-k is one
  // nth_element (on logits, then weights for the k survivors only), top-p
  // halves the range with nth_element until the boundary is found, so both
  // are O(n_vocab). work_ keeps the penalised logits logprobs are read from.
  // More likely first; equal weights go to the lower id.
  auto heavier = [](const Candidate& a, const Candidate& b) { return a.w != b.w ? a.w > b.w : a.id < b.id; };
  cand_.resize(n_vocab);
  auto begin = cand_.begin();
  size_t n_cand = n_vocab;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n_vocab) {
    n_cand = static_cast<size_t>(params_.top_k);
    // Only the tokens whose logits fall in the top buckets of a histogram over
    // order-preserving float keys are considered (a short first pass), and
    // nth_element runs on the boundary bucket alone.
    auto key_bucket = [](float x) {
      uint32_t bits;
      std::memcpy(&bits, &x, sizeof(bits));
      bits = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;  // monotone in x
      return bits >> kBucketShift;
    };
    bucket_count_.assign(kBuckets, 0);
    for (size_t i = 0; i < n_vocab; ++i) ++bucket_count_[key_bucket(work_[i])];
    size_t above = 0;
    uint32_t boundary = 0;
    for (uint32_t b = kBuckets; b-- > 0;) {
      if (above + bucket_count_[b] >= n_cand) {
        boundary = b;
        break;
      }
      above += bucket_count_[b];
    }
    size_t n_in = 0;  // heavier buckets first, then the boundary bucket
    for (size_t i = 0; i < n_vocab; ++i) {
      if (key_bucket(work_[i]) > boundary) cand_[n_in++] = {work_[i], static_cast<int32_t>(i)};
    }
    for (size_t i = 0; i < n_vocab; ++i) {
      if (key_bucket(work_[i]) == boundary) cand_[n_in++] = {work_[i], static_cast<int32_t>(i)};
    }
    std::nth_element(begin + static_cast<std::ptrdiff_t>(above), begin + static_cast<std::ptrdiff_t>(n_cand),
                     begin + static_cast<std::ptrdiff_t>(n_in), heavier);
    const float inv_t = 1.0f / params_.temperature;
    for (size_t i = 0; i < n_cand; ++i) cand_[i].w = std::exp((cand_[i].w - work_[best]) * inv_t);
  } else {
    if (params_.temperature != 1.0f) {
      const float inv_t = 1.0f / params_.temperature;
      for (size_t i = 0; i < n_vocab; ++i) probs_[i] = work_[i] * inv_t;
      ops::softmax(probs_.data(), static_cast<int64_t>(n_vocab));
    }
    for (size_t i = 0; i < n_vocab; ++i) cand_[i] = {probs_[i], static_cast<int32_t>(i)};
  }
  // The best token is always a candidate; min-p is relative to it.
  float w_max = 0.0f;
  for (size_t i = 0; i < n_cand; ++i) w_max = std::max(w_max, cand_[i].w);
  auto mass_of = [&](size_t from, size_t to) {
    double m = 0.0;
    for (size_t i = from; i < to; ++i) m += cand_[i].w;
    return m;
  };

  // Locally typical: order by |surprisal - entropy| (ties to the lower id)
  // and keep the shortest prefix whose mass reaches typical_p (at least one
  // token). Sorts the candidates: it is off unless asked for.
  if (params_.typical_p < 1.0f && n_cand > 1) {
    const double total = mass_of(0, n_cand);
    double entropy = 0.0;
    for (size_t i = 0; i < n_cand; ++i) {
      const double p = cand_[i].w / total;
      if (p > 0.0) entropy -= p * std::log(p);
    }
    // Each candidate's distance once, then one sort by (distance, id).
    typical_.resize(n_cand);
    for (size_t i = 0; i < n_cand; ++i) {
      const double p = cand_[i].w / total;
      typical_[i] = {p > 0.0 ? std::abs(-std::log(p) - entropy) : std::numeric_limits<double>::infinity(), cand_[i]};
    }
    std::sort(typical_.begin(), typical_.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second.id < b.second.id;
    });
    for (size_t i = 0; i < n_cand; ++i) cand_[i] = typical_[i].second;
    const double target = static_cast<double>(params_.typical_p) * total;
    double acc = 0.0;
    size_t keep = 0;
    while (keep < n_cand) {
      acc += cand_[keep++].w;
      if (acc >= target) break;
    }
    n_cand = std::max<size_t>(keep, 1);
    w_max = 0.0f;
    for (size_t i = 0; i < n_cand; ++i) w_max = std::max(w_max, cand_[i].w);
  }

  // top-p: the smallest most-likely set whose mass reaches top_p (at least one
  // token). A histogram over the weights' float bits (monotone for positive
  // floats) finds the boundary bucket in one pass; everything heavier is in.
  // Within that bucket, halving with nth_element keeps the invariant: [0, lo)
  // is in the set and heavier than [lo, hi), which is heavier than the rest;
  // the boundary lies in [lo, hi).
  if (params_.top_p < 1.0f) {
    const double target = static_cast<double>(params_.top_p) * mass_of(0, n_cand);
    auto bucket_of = [](float w) {
      uint32_t bits;
      std::memcpy(&bits, &w, sizeof(bits));
      return bits >> kBucketShift;
    };
    bucket_mass_.assign(kBuckets, 0.0);
    for (size_t i = 0; i < n_cand; ++i) bucket_mass_[bucket_of(cand_[i].w)] += cand_[i].w;
    double acc = 0.0;
    uint32_t boundary = 0;
    for (uint32_t b = kBuckets; b-- > 0;) {
      if (acc + bucket_mass_[b] >= target) {
        boundary = b;
        break;
      }
      acc += bucket_mass_[b];
    }
    // [0, lo): heavier buckets; [lo, hi): the boundary bucket.
    const auto heavier_end = std::partition(begin, begin + static_cast<std::ptrdiff_t>(n_cand),
                                            [&](const Candidate& c) { return bucket_of(c.w) > boundary; });
    const auto boundary_end = std::partition(heavier_end, begin + static_cast<std::ptrdiff_t>(n_cand),
                                             [&](const Candidate& c) { return bucket_of(c.w) == boundary; });
    size_t lo = static_cast<size_t>(heavier_end - begin);
    size_t hi = static_cast<size_t>(boundary_end - begin);
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

  // min-p: p >= min_p * p_max.
  const float min_w = params_.min_p * w_max;
  size_t n_keep = 0;
  for (size_t i = 0; i < n_cand; ++i) {
    if (params_.min_p > 0.0f && cand_[i].w < min_w) continue;
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
