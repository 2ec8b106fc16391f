// Speculative decoding on the real stories260K model: greedy output is
// exactly plain decoding's (rung 1), sampled output has the target's
// distribution, and a draft whose cycle costs more than it saves is found
// out by measurement and switched off.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "engine/model_draft.h"
#include "engine/ngram_draft.h"
#include "engine/spec_bench.h"
#include "engine_test_util.h"

namespace ladder::engine {
namespace {

using namespace ladder::engine::testing;  // NOLINT

std::shared_ptr<Draft> model_draft(const std::string& spec_text) {
  auto spec = parse_draft_spec(spec_text);
  LADDER_CHECK(spec.is_ok(), spec.status().to_string());
  ModelDraftOptions options;
  options.n_kv_blocks = 64;
  auto d = make_draft(*spec, *stories().model, stories().file, options);
  LADDER_CHECK(d.is_ok(), d.status().to_string());
  return std::move(d).value();
}

EngineConfig spec_config(std::shared_ptr<Draft> draft, int32_t k = 4, bool adaptive = false) {
  EngineConfig cfg;
  cfg.n_kv_blocks = 128;
  cfg.scheduler.max_batch_tokens = 256;
  cfg.max_queue = 4096;
  cfg.speculative.draft = std::move(draft);
  cfg.speculative.k = k;
  cfg.speculative.adaptive = adaptive;
  return cfg;
}

// 64 greedy requests: prompts that repeat themselves (so n-gram lookup
// finds continuations), synthetic ones and the golden prompt.
std::vector<Request> greedy_cases() {
  std::vector<Request> out;
  for (int i = 0; i < 64; ++i) {
    std::vector<int32_t> p = i % 8 == 0 ? kOnceUponATime : synthetic_prompt(6 + static_cast<size_t>(i % 13), i);
    if (i % 3 == 1) {
      const std::vector<int32_t> again(p.begin() + 1, p.end());
      p.insert(p.end(), again.begin(), again.end());
    }
    Request r = greedy_request(p, 8 + (i * 7) % 40);
    r.speculative = i % 2 == 0;  // half plain, in the same batches
    out.push_back(std::move(r));
  }
  return out;
}

// Rung 1: every case alone, plain decoding.
const std::vector<std::vector<int32_t>>& plain_runs() {
  static const auto* runs = [] {
    auto* out = new std::vector<std::vector<int32_t>>();
    EngineConfig cfg;
    cfg.n_kv_blocks = 64;
    cfg.prefix_caching = false;
    auto engine = make_engine(cfg);
    for (Request r : greedy_cases()) {
      r.speculative = false;
      out->push_back(run(*engine, std::move(r)).tokens);
    }
    return out;
  }();
  return *runs;
}

void expect_greedy_matches_plain(std::shared_ptr<Draft> draft, bool adaptive) {
  ASSERT_EQ(plain_runs()[0], std::vector<int32_t>(kGolden64.begin(), kGolden64.begin() + 8));
  auto engine = make_engine(spec_config(std::move(draft), 4, adaptive));
  std::vector<Submission> subs;
  for (Request r : greedy_cases()) {
    auto s = engine->submit(std::move(r));
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    subs.push_back(*s);
  }
  int64_t accepted = 0;
  for (size_t i = 0; i < subs.size(); ++i) {
    const Outcome o = drain(*subs[i].stream);
    EXPECT_EQ(o.tokens, plain_runs()[i]) << "request " << i;
    const SpecUsage& u = o.final_event.usage.speculative;
    if (i % 2 == 1) {
      EXPECT_EQ(u.cycles, 0) << "a plain request speculated";
    }
    EXPECT_LE(u.accepted, u.proposed);
    accepted += u.accepted;
  }
  const EngineMetrics m = engine->metrics();
  EXPECT_GT(m.spec.cycles, 0);
  EXPECT_GT(accepted, 0);
  EXPECT_EQ(m.spec.accepted, accepted);
  expect_pool_whole(*engine);
}

TEST(Speculative, NgramGreedyMatchesPlainDecodingTokenForToken) {
  expect_greedy_matches_plain(std::make_shared<NgramDraft>(), false);
}

TEST(Speculative, EarlyExitGreedyMatchesPlainDecodingTokenForToken) {
  expect_greedy_matches_plain(model_draft("early-exit:2"), false);
}

TEST(Speculative, SelfQ4GreedyMatchesPlainDecodingTokenForToken) {
  expect_greedy_matches_plain(model_draft("self-q4"), true);
}

TEST(Speculative, GoldenTokensWithEveryDraftAccepted) {
  // A draft that is the target itself is always right: 5 tokens per cycle.
  auto draft = model_draft("early-exit:" + std::to_string(stories().model->config().n_layers));
  auto engine = make_engine(spec_config(draft, 4, false));
  const Outcome o = run(*engine, greedy_request(kOnceUponATime, 64));
  EXPECT_EQ(o.tokens, kGolden64);
  const SpecUsage& u = o.final_event.usage.speculative;
  EXPECT_EQ(u.accepted, u.proposed);
  EXPECT_GE(u.tokens_per_cycle(), 4.5);
  expect_pool_whole(*engine);
  EXPECT_EQ(std::static_pointer_cast<ModelDraft>(draft)->kv_blocks_used(), 0);
}

// Samples `n` requests at temperature `t` with seeds [seed0, seed0 + n) and
// returns their outputs.
std::vector<std::vector<int32_t>> sample_many(Engine& engine, int n, uint64_t seed0, float t, bool speculative,
                                              int64_t max_tokens = 4) {
  std::vector<Submission> subs;
  for (int i = 0; i < n; ++i) {
    Request r = greedy_request(kOnceUponATime, max_tokens);
    r.sampling.temperature = t;
    r.sampling.seed = seed0 + static_cast<uint64_t>(i);
    r.speculative = speculative;
    auto s = engine.submit(std::move(r));
    LADDER_CHECK(s.is_ok(), s.status().to_string());
    subs.push_back(*s);
  }
  std::vector<std::vector<int32_t>> out;
  for (Submission& s : subs) out.push_back(drain(*s.stream).tokens);
  return out;
}

// Two-sample chi-square over the token at `pos`: bins with at least 10
// samples in all, the rest pooled. Returns {statistic, degrees of freedom}.
std::pair<double, int> chi_square(const std::vector<std::vector<int32_t>>& a,
                                  const std::vector<std::vector<int32_t>>& b, size_t pos) {
  std::map<int32_t, std::pair<double, double>> counts;
  for (const auto& s : a) counts[s[pos]].first += 1;
  for (const auto& s : b) counts[s[pos]].second += 1;
  std::vector<std::pair<double, double>> bins;
  std::pair<double, double> rest{0, 0};
  for (const auto& [tok, c] : counts) {
    if (c.first + c.second >= 10) {
      bins.push_back(c);
    } else {
      rest.first += c.first;
      rest.second += c.second;
    }
  }
  if (rest.first + rest.second > 0) bins.push_back(rest);
  double stat = 0;  // equal sample sizes
  for (const auto& [x, y] : bins) stat += (x - y) * (x - y) / (x + y);
  return {stat, static_cast<int>(bins.size()) - 1};
}

// The chi-square critical value at p = 0.001 (Wilson-Hilferty).
double chi_square_critical(int df) {
  const double z = 3.0902;
  const double d = df;
  return d * std::pow(1 - 2 / (9 * d) + z * std::sqrt(2 / (9 * d)), 3);
}

TEST(Speculative, SampledOutputHasTheTargetsDistribution) {
  constexpr int kN = 1500;
  constexpr float kT = 1.0f;
  // The early-exit draft proposes a token at every position, so every
  // output token past the first goes through verification.
  auto engine = make_engine(spec_config(model_draft("early-exit:2"), 3, false));
  const auto plain = sample_many(*engine, kN, 1, kT, false);
  const auto spec = sample_many(*engine, kN, 1'000'000, kT, true);
  const EngineMetrics m = engine->metrics();
  EXPECT_GT(m.spec.cycles, kN / 2);
  EXPECT_GT(m.spec.accepted, 0);
  EXPECT_LT(m.spec.accepted, m.spec.proposed);  // rejections happened: the test can see a wrong rule
  for (size_t pos = 1; pos < 4; ++pos) {
    const auto [stat, df] = chi_square(plain, spec, pos);
    ASSERT_GE(df, 3);
    EXPECT_LT(stat, chi_square_critical(df)) << "token " << pos << ": chi-square " << stat << " with " << df
                                             << " degrees of freedom";
  }
  // Same seeds, same tokens: a deterministic draft draws the RNG exactly as
  // plain decoding does.
  const auto spec_same_seeds = sample_many(*engine, 200, 1, kT, true);
  for (size_t i = 0; i < spec_same_seeds.size(); ++i) EXPECT_EQ(spec_same_seeds[i], plain[i]) << "seed " << i + 1;
  expect_pool_whole(*engine);
}

// Runs `n` sampled requests one after another (batch 1) and returns the
// wall time in seconds and the tokens produced.
std::pair<double, int64_t> run_one_by_one(Engine& engine, int n, float t, int64_t max_tokens) {
  const auto start = std::chrono::steady_clock::now();
  int64_t tokens = 0;
  for (int i = 0; i < n; ++i) {
    Request r = greedy_request(kOnceUponATime, max_tokens);
    r.sampling.temperature = t;
    r.sampling.seed = 100 + static_cast<uint64_t>(i);
    tokens += static_cast<int64_t>(run(engine, std::move(r)).tokens.size());
  }
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), tokens};
}

TEST(Speculative, ADraftThatCostsMoreThanItSavesIsSwitchedOff) {
  // The seed's example: a draft as big as the target (all its layers), run
  // greedily against a target sampling at a temperature where about four in
  // five draft tokens are accepted, k = 4: ~3.36 tokens per cycle, but each
  // cycle pays four full forward passes for the draft plus the verification.
  const int64_t n_layers = stories().model->config().n_layers;
  auto draft = model_draft("early-exit:" + std::to_string(n_layers));
  constexpr float kT = 0.6f;
  constexpr int kRequests = 6;
  constexpr int64_t kMaxTokens = 120;

  // Paired: plain decoding, then speculation forced on, on the same requests.
  auto plain = make_engine(spec_config(nullptr));
  const auto [plain_s, plain_tokens] = run_one_by_one(*plain, kRequests, kT, kMaxTokens);
  plain.reset();
  auto forced = make_engine(spec_config(draft, 4, false));
  const auto [forced_s, forced_tokens] = run_one_by_one(*forced, kRequests, kT, kMaxTokens);
  const EngineMetrics fm = forced->metrics();
  forced.reset();
  const double tokens_per_cycle =
      static_cast<double>(fm.spec.accepted + fm.spec.cycles) / static_cast<double>(fm.spec.cycles);
  std::printf("plain %.0f tok/s, forced speculation %.0f tok/s at %.2f tokens per cycle\n",
              static_cast<double>(plain_tokens) / plain_s, static_cast<double>(forced_tokens) / forced_s,
              tokens_per_cycle);
  EXPECT_GT(tokens_per_cycle, 2.8);
  EXPECT_LT(tokens_per_cycle, 4.0);

  // Adaptive: the engine measures the cycle and stops speculating.
  auto adaptive = make_engine(spec_config(draft, 4, true));
  const auto [adaptive_s, adaptive_tokens] = run_one_by_one(*adaptive, kRequests, kT, kMaxTokens);
  const EngineMetrics m = adaptive->metrics();
  std::printf("adaptive %.0f tok/s, %ld cycles, predicted gain %.2f, measured %.2f\n",
              static_cast<double>(adaptive_tokens) / adaptive_s, static_cast<long>(m.spec.cycles),
              m.spec.predicted_gain, m.spec.measured_gain);
  EXPECT_LT(m.spec.predicted_gain, 1.0);
  // The in-turn measurement agrees: speculative steps are slower per token.
  EXPECT_GT(m.spec.measured_gain, 0.0) << "measured on both sides";
  EXPECT_LT(m.spec.measured_gain, 1.0);
  EXPECT_FALSE(m.spec.enabled);
  // Speculating throughout would take ~tokens / 3.36 cycles; probes only remain.
  EXPECT_LT(static_cast<double>(m.spec.cycles),
            0.25 * static_cast<double>(adaptive_tokens) / tokens_per_cycle);
  expect_pool_whole(*adaptive);
}

// The verify-cost measurement runs k + 1 positions against 1 for each k
// and refuses what cannot fit. (Its figures are in docs/BENCHMARKS.md; a
// test does not time them.)
TEST(Speculative, VerifyCostMeasuresEveryK) {
  auto costs = measure_verify_cost(*stories().model, {1, 4}, 32, 2, 1, TensorType::kF16);
  ASSERT_TRUE(costs.is_ok()) << costs.status().to_string();
  ASSERT_EQ(costs->size(), 2u);
  EXPECT_EQ((*costs)[0].k, 1);
  EXPECT_EQ((*costs)[1].k, 4);
  for (const VerifyCost& c : *costs) {
    EXPECT_GT(c.step_us, 0);
    EXPECT_GT(c.verify_us, 0);
    EXPECT_DOUBLE_EQ(c.ratio, c.verify_us / c.step_us);
  }
  EXPECT_FALSE(measure_verify_cost(*stories().model, {0}, 32, 1, 1, TensorType::kF16).is_ok());
  EXPECT_FALSE(measure_verify_cost(*stories().model, {8}, 125, 1, 1, TensorType::kF16).is_ok());  // past 128
}

TEST(Speculative, DraftSpecsParseAndBadOnesSayWhy) {
  EXPECT_EQ(parse_draft_spec("ngram")->kind, DraftSpec::Kind::kNgram);
  EXPECT_EQ(parse_draft_spec("self-q4")->kind, DraftSpec::Kind::kSelfQ4);
  EXPECT_EQ(parse_draft_spec("early-exit:3")->n_layers, 3);
  EXPECT_EQ(parse_draft_spec("draft:/m/d.gguf")->path, "/m/d.gguf");
  EXPECT_EQ(parse_draft_spec("draft:/m/d.gguf")->to_string(), "draft:/m/d.gguf");
  EXPECT_EQ(parse_draft_spec("off")->kind, DraftSpec::Kind::kNone);
  EXPECT_FALSE(parse_draft_spec("early-exit:0").is_ok());
  EXPECT_FALSE(parse_draft_spec("early-exit:x").is_ok());
  EXPECT_FALSE(parse_draft_spec("medusa").is_ok());
  auto too_deep = ModelDraft::create(*parse_draft_spec("early-exit:99"), *stories().model, stories().file, {64});
  ASSERT_FALSE(too_deep.is_ok());
  EXPECT_NE(too_deep.status().message().find("L must be in [1, 5]"), std::string::npos);
}

TEST(Speculative, ADraftModelWithAnotherVocabularyIsRefused) {
  auto spec = parse_draft_spec("draft:" + ladder::testing::shared_path("models/llama-2-tiny-random.gguf"));
  auto d = ModelDraft::create(*spec, *stories().model, stories().file, {64});
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.status().message().find("vocabulary of 32000 tokens; the target"), std::string::npos)
      << d.status().message();
}

TEST(Speculative, NgramLookupCopiesTheLatestContinuation) {
  NgramDraft d(1, 3);
  // "... 5 6 7 | 8 9 ... 5 6 7" -> 8 9 (the trigram's latest earlier occurrence).
  EXPECT_EQ(d.lookup(std::vector<int32_t>{1, 5, 6, 7, 8, 9, 4, 5, 6, 7}, 2), (std::vector<int32_t>{8, 9}));
  EXPECT_EQ(d.lookup(std::vector<int32_t>{1, 2, 3}, 4), std::vector<int32_t>{});
  // Falls back to a unigram; the continuation stops at the sequence's end.
  EXPECT_EQ(d.lookup(std::vector<int32_t>{3, 4, 9, 3}, 5), (std::vector<int32_t>{4, 9, 3}));
}

}  // namespace
}  // namespace ladder::engine
