#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <vector>

namespace ladder::engine {
namespace {

// log(sum(exp(x))) computed directly in double: the independent reference.
double log_sum_exp(const std::vector<float>& x) {
  double s = 0.0;
  for (float v : x) s += std::exp(static_cast<double>(v));
  return std::log(s);
}

// Logits whose softmax (temperature 1) is exactly `probs`.
std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> x;
  for (double p : probs) x.push_back(static_cast<float>(std::log(p)));
  return x;
}

std::map<int32_t, int> draw(const SamplingParams& params, const std::vector<float>& logits, int n,
                            uint64_t seed) {
  Sampler s(params, seed);
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i) ++counts[s.sample(logits, {}, {}).token];
  return counts;
}

std::set<int32_t> keys(const std::map<int32_t, int>& m) {
  std::set<int32_t> k;
  for (const auto& [t, c] : m) k.insert(t);
  return k;
}

TEST(Sampler, GreedyIsArgmaxWithTiesToTheLowerId) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s(p, 1);
  const std::vector<float> logits = {0.1f, 2.0f, -1.0f, 2.0f, 1.5f};
  const SampledToken t = s.sample(logits, {}, {});
  EXPECT_EQ(t.token, 1);
  EXPECT_NEAR(t.logprob, 2.0 - log_sum_exp(logits), 1e-6);
  // top_k = 1 is greedy too, at any temperature.
  SamplingParams k1;
  k1.top_k = 1;
  k1.temperature = 5.0f;
  Sampler s1(k1, 99);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s1.sample(logits, {}, {}).token, 1);
}

TEST(Sampler, SeededDrawsAreReproducible) {
  SamplingParams p;
  p.temperature = 1.0f;
  const std::vector<float> logits = logits_of({0.2, 0.2, 0.2, 0.2, 0.2});
  auto run = [&](uint64_t seed) {
    Sampler s(p, seed);
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.sample(logits, {}, {}).token);
    return out;
  };
  EXPECT_EQ(run(1234), run(1234));
  EXPECT_NE(run(1234), run(1235));
}

TEST(Sampler, TopKKeepsTheKMostLikely) {
  SamplingParams p;
  p.top_k = 2;
  const auto logits = logits_of({0.1, 0.4, 0.05, 0.3, 0.15});
  const auto counts = draw(p, logits, 4000, 7);
  EXPECT_EQ(keys(counts), (std::set<int32_t>{1, 3}));
  // Renormalised: 0.4 / 0.7 = 0.571.
  EXPECT_NEAR(counts.at(1) / 4000.0, 0.4 / 0.7, 0.03);
}

TEST(Sampler, TopKOnALargeVocabularyMatchesAFullSort) {
  // 3000 logits in [-8, 8) with many exact ties; the reference top 50 comes
  // from a plain sort (ties to the lower id).
  std::vector<float> logits(3000);
  uint64_t x = 77;
  for (float& v : logits) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    v = static_cast<float>(static_cast<int>((x >> 33) % 400) - 200) / 25.0f;
  }
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] != logits[static_cast<size_t>(b)]
               ? logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)]
               : a < b;
  });
  const std::set<int32_t> top50(ids.begin(), ids.begin() + 50);
  SamplingParams p;
  p.top_k = 50;
  p.temperature = 50.0f;  // nearly flat, so every survivor shows up
  EXPECT_EQ(keys(draw(p, logits, 20000, 51)), top50);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingTheMass) {
  SamplingParams p;
  const auto logits = logits_of({0.15, 0.5, 0.05, 0.3});
  p.top_p = 0.75f;  // 0.5 + 0.3 = 0.8 >= 0.75
  auto counts = draw(p, logits, 4000, 11);
  EXPECT_EQ(keys(counts), (std::set<int32_t>{1, 3}));
  EXPECT_NEAR(counts.at(1) / 4000.0, 0.5 / 0.8, 0.03);
  p.top_p = 0.85f;  // needs the third: 0.95
  EXPECT_EQ(keys(draw(p, logits, 4000, 12)), (std::set<int32_t>{0, 1, 3}));
  p.top_p = 0.1f;  // the single most likely token
  EXPECT_EQ(keys(draw(p, logits, 500, 13)), (std::set<int32_t>{1}));
}

TEST(Sampler, TopPOverALongFlatTail) {
  // Token 700 holds half the mass; 999 others share the rest equally, so
  // top_p 0.75 keeps 700 plus the 500 lowest ids (ties go to the lower id).
  std::vector<double> probs(1000, 0.5 / 999);
  probs[700] = 0.5;
  SamplingParams p;
  p.top_p = 0.75f;
  const auto counts = draw(p, logits_of(probs), 4000, 31);
  bool deep_in_the_tail = false;
  for (const auto& [t, c] : counts) {
    EXPECT_TRUE(t == 700 || t < 500) << t;
    deep_in_the_tail |= t >= 256 && t < 500;
  }
  EXPECT_TRUE(deep_in_the_tail);
  EXPECT_NEAR(counts.at(700) / 4000.0, 0.5 / 0.75, 0.03);
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
  SamplingParams p;
  const auto logits = logits_of({0.15, 0.5, 0.05, 0.3});
  p.min_p = 0.35f;  // threshold 0.175
  EXPECT_EQ(keys(draw(p, logits, 4000, 21)), (std::set<int32_t>{1, 3}));
  p.min_p = 0.25f;  // threshold 0.125
  EXPECT_EQ(keys(draw(p, logits, 4000, 22)), (std::set<int32_t>{0, 1, 3}));
}

TEST(Sampler, TruncationsChainTopKThenTopPThenMinP) {
  const auto logits = logits_of({0.15, 0.5, 0.05, 0.3});
  SamplingParams p;
  p.top_k = 3;     // {1, 3, 0}, renormalised {0.526, 0.316, 0.158}
  p.top_p = 0.9f;  // 0.842 < 0.9: all three stay
  EXPECT_EQ(keys(draw(p, logits, 4000, 41)), (std::set<int32_t>{0, 1, 3}));
  p.top_p = 0.8f;  // 0.842 >= 0.8: two
  EXPECT_EQ(keys(draw(p, logits, 4000, 42)), (std::set<int32_t>{1, 3}));
  p.top_p = 0.9f;
  p.min_p = 0.35f;  // 0.158 < 0.35 * 0.526
  EXPECT_EQ(keys(draw(p, logits, 4000, 43)), (std::set<int32_t>{1, 3}));
}

// p = (0.5, 0.3, 0.2): entropy 1.0297 nats; surprisals 0.693, 1.204, 1.609
// are 0.337, 0.174, 0.580 from it, so the typical order is 1, 0, 2.
TEST(Sampler, TypicalPKeepsTheTokensNearestTheEntropy) {
  const std::vector<float> logits = logits_of({0.5, 0.3, 0.2});
  SamplingParams p;
  p.typical_p = 0.25f;  // token 1 alone reaches it: never the most likely token
  EXPECT_EQ(keys(draw(p, logits, 300, 5)), (std::set<int32_t>{1}));
  p.typical_p = 0.6f;  // tokens 1 and 0 (mass 0.8), drawn 3 : 5
  const auto counts = draw(p, logits, 4000, 6);
  EXPECT_EQ(keys(counts), (std::set<int32_t>{0, 1}));
  EXPECT_NEAR(static_cast<double>(counts.at(0)) / 4000.0, 0.625, 0.03);
  // Greedy ignores it, as it ignores every truncation.
  p.temperature = 0.0f;
  EXPECT_EQ(keys(draw(p, logits, 10, 7)), (std::set<int32_t>{0}));
}

TEST(Sampler, MinTokensRulesOutTheStopIdsUntilReached) {
  const std::vector<float> logits = logits_of({0.9, 0.05, 0.05});
  SamplingParams p;
  p.temperature = 0.0f;
  p.min_tokens = 2;
  p.banned_before_min = {0};
  Sampler s(p, 1);
  const std::vector<int32_t> none, one = {1}, two = {1, 2};
  EXPECT_EQ(s.sample(logits, {}, none).token, 1);
  EXPECT_EQ(s.sample(logits, {}, one).token, 1);
  EXPECT_EQ(s.sample(logits, {}, two).token, 0);  // two tokens out: allowed again
}

TEST(Sampler, TemperatureSharpensTheDistribution) {
  SamplingParams p;
  p.temperature = 0.5f;  // p_i^2 renormalised: 0.25/0.26 for token 0 of {0.5 .. } below
  const auto logits = logits_of({0.5, 0.1, 0.4});
  const auto counts = draw(p, logits, 8000, 5);
  const double z = 0.25 + 0.01 + 0.16;
  EXPECT_NEAR(counts.at(0) / 8000.0, 0.25 / z, 0.02);
  EXPECT_NEAR(counts.at(2) / 8000.0, 0.16 / z, 0.02);
}

TEST(Sampler, PenaltiesArithmetic) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  std::vector<float> logits = {2.0f, -2.0f, 1.0f, 3.0f};
  const std::vector<int32_t> prompt = {0};
  const std::vector<int32_t> output = {1, 1, 2};
  apply_penalties(p, prompt, output, logits);
  // 0: seen in prompt, positive -> 2/2 = 1; no presence/frequency (prompt only).
  // 1: -2*2 = -4, then -0.5 - 0.25*2 = -5.
  // 2: 1/2 = 0.5, then -0.5 - 0.25 = -0.25.
  // 3: untouched.
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -5.0f, -0.25f, 3.0f}));

  // The sampler uses them: greedy now picks 3, and logprobs come from the
  // penalised logits.
  p.temperature = 0.0f;
  p.top_logprobs = 2;
  Sampler s(p, 0);
  const std::vector<float> raw = {2.0f, -2.0f, 1.0f, 1.5f};
  const SampledToken t = s.sample(raw, prompt, output);
  // Penalised: {1, -5, -0.25, 1.5}
  const std::vector<float> pen = {1.0f, -5.0f, -0.25f, 1.5f};
  EXPECT_EQ(t.token, 3);
  EXPECT_NEAR(t.logprob, 1.5 - log_sum_exp(pen), 1e-6);
  ASSERT_EQ(t.top.size(), 2u);
  EXPECT_EQ(t.top[0].token, 3);
  EXPECT_EQ(t.top[1].token, 0);
  EXPECT_NEAR(t.top[1].logprob, 1.0 - log_sum_exp(pen), 1e-6);
}

TEST(Sampler, TopLogprobsAreOrderedWithTiesToTheLowerId) {
  SamplingParams p;
  p.top_logprobs = 3;
  p.seed = 3;
  Sampler s(p, 3);
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
  const SampledToken t = s.sample(logits, {}, {});
  const double lse = log_sum_exp(logits);
  ASSERT_EQ(t.top.size(), 3u);
  EXPECT_EQ(t.top[0].token, 1);
  EXPECT_EQ(t.top[1].token, 3);
  EXPECT_EQ(t.top[2].token, 2);
  EXPECT_NEAR(t.top[0].logprob, 3.0 - lse, 1e-6);
  EXPECT_NEAR(t.top[2].logprob, 2.0 - lse, 1e-6);
  // Logprobs do not depend on temperature or truncation.
  EXPECT_NEAR(t.logprob, logits[static_cast<size_t>(t.token)] - lse, 1e-6);
  SamplingParams hot = p;
  hot.temperature = 3.0f;
  hot.top_k = 2;
  Sampler s2(hot, 3);
  const SampledToken t2 = s2.sample(logits, {}, {});
  EXPECT_NEAR(t2.top[2].logprob, 2.0 - lse, 1e-6);
}

TEST(SamplingParams, ValidationNamesTheField) {
  SamplingParams p;
  EXPECT_TRUE(p.validate().is_ok());
  p.top_p = 0.0f;
  EXPECT_NE(p.validate().message().find("top_p"), std::string::npos);
  p = {};
  p.temperature = -1.0f;
  EXPECT_EQ(p.validate().code(), StatusCode::kInvalidArgument);
  p = {};
  p.top_logprobs = 21;
  EXPECT_NE(p.validate().message().find("top_logprobs"), std::string::npos);
  p = {};
  p.min_p = 1.5f;
  EXPECT_FALSE(p.validate().is_ok());
  p = {};
  p.frequency_penalty = 3.0f;
  EXPECT_FALSE(p.validate().is_ok());
  p = {};
  p.repetition_penalty = 0.0f;
  EXPECT_FALSE(p.validate().is_ok());
}

}  // namespace
}  // namespace ladder::engine
