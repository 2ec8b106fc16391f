// Sampler: turns one row of logits into the next token of one request, with
// the request's own RNG (seeded from its seed), so a request's output is
// reproducible whatever else runs beside it.
//
// Processing order, each step on the result of the previous one:
//   1. penalties: repetition (prompt + output tokens), presence and frequency
//      (output tokens only); then logit_bias; then, while the output is
//      shorter than min_tokens, the stop ids are ruled out (-inf). (A token constraint, e.g. a
//      grammar, has already set the logits of disallowed tokens to -inf.)
//   2. logprobs are taken HERE: log-softmax over the full vocabulary of the
//      penalised logits at temperature 1, before temperature and truncation
//      (so they describe the model's distribution, as OpenAI and vLLM report
//      them, and do not depend on top-k/top-p/min-p);
//   3. greedy (temperature 0 or top_k 1): argmax, ties to the lower id; else
//   4. weights softmax(x / temperature); keep top-k, then the locally
//      typical set (typical_p, over the top-k mass), then top-p (over what
//      is left), then min-p (p >= min_p * p_max);
//   5. draw from the survivors with the request's RNG, walking them in the
//      (deterministic) order that selection left them in.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "engine/sampling_params.h"

namespace ladder::engine {

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

struct SampledToken {
  int32_t token = 0;
  float logprob = 0.0f;           // of the chosen token (step 2 above)
  std::vector<TokenLogprob> top;  // [top_logprobs], most likely first, ties to the lower id
};

class Sampler {
 public:
  // params must be valid (SamplingParams::validate). seed overrides params.seed.
  Sampler(const SamplingParams& params, uint64_t seed);

  // logits: [n_vocab]. prompt / output: the sequence's tokens so far, for the
  // penalties.
  SampledToken sample(std::span<const float> logits, std::span<const int32_t> prompt,
                      std::span<const int32_t> output);

  const SamplingParams& params() const { return params_; }

 private:
  // Uniform in [0, 1) from 53 random bits (portable, unlike std distributions).
  double uniform();

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<float> work_;  // [n_vocab] processed logits
  struct Candidate {
    float w;  // proportional to exp(logit / temperature)
    int32_t id;
  };
  std::vector<int32_t> order_;   // [n_vocab] ids, for top logprobs
  std::vector<Candidate> cand_;  // [n_vocab] sampling candidates
  std::vector<float> probs_;     // [n_vocab] softmax scratch
  std::vector<std::pair<double, Candidate>> typical_;  // typical_p: (|surprisal - entropy|, candidate)
  // Histograms over the top bits of float keys (top-p: the positive weights;
  // top-k: order-preserving logit keys): 8 exponent + 4 mantissa bits.
  static constexpr uint32_t kBucketShift = 19;
  static constexpr uint32_t kBuckets = 1u << (32 - kBucketShift);
  std::vector<double> bucket_mass_;     // [kBuckets]
  std::vector<uint32_t> bucket_count_;  // [kBuckets], top-k
};

// Step 1 on its own, in place (exposed for tests); logit_bias included.
void apply_penalties(const SamplingParams& params, std::span<const int32_t> prompt,
                     std::span<const int32_t> output, std::span<float> logits);

}  // namespace ladder::engine
