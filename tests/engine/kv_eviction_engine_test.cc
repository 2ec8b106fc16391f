// KV eviction behind the engine with the real stories260K model (context
// 128, blocks of 16): a budget that holds the whole sequence changes
// nothing (the golden ids); a small budget keeps generating to the context
// limit inside a pool too small for the whole history; gapped sequences
// preempted under pressure recompute and finish; bad settings are refused.
#include <gtest/gtest.h>

#include <vector>

#include "engine/engine.h"
#include "engine/ngram_draft.h"
#include "engine_test_util.h"

namespace ladder::engine {
namespace {

using namespace ladder::engine::testing;  // NOLINT

kv::EvictionPolicy window(int64_t budget, int64_t sinks = 4) {
  return {.kind = kv::EvictionKind::kWindow, .budget_tokens = budget, .sink_tokens = sinks};
}

kv::EvictionPolicy snap(int64_t budget, int64_t sinks = 4) {
  return {.kind = kv::EvictionKind::kSnap, .budget_tokens = budget, .sink_tokens = sinks};
}

TEST(KvEvictionEngine, ABudgetHoldingTheWholeSequenceKeepsTheGoldenIds) {
  for (TensorType dtype : {TensorType::kF32, TensorType::kF16}) {
    for (const kv::EvictionPolicy& policy : {window(80), snap(80)}) {  // 5 blocks: 5 + 64 tokens fit
      EngineConfig cfg;
      cfg.kv_dtype = dtype;
      cfg.kv_eviction = policy;
      auto engine = make_engine(cfg);
      const Outcome o = run(*engine, greedy_request(kOnceUponATime, 64));
      EXPECT_EQ(o.tokens, kGolden64) << tensor_type_name(dtype) << " " << kv::eviction_kind_name(policy.kind);
      EXPECT_EQ(engine->metrics().kv_evicted_blocks, 0);
      expect_pool_whole(*engine);
    }
  }
}

TEST(KvEvictionEngine, SnapGeneratesToTheContextInABoundedPool) {
  EngineConfig cfg;
  cfg.kv_dtype = TensorType::kF32;
  cfg.kv_eviction = snap(64);  // a sink block, 2 recent blocks and 1 most-attended older block
  cfg.scheduler.max_chunk_tokens = 16;
  cfg.n_kv_blocks = 6;  // 4 budget blocks + 1 chunk block + 1; the whole history needs 8
  auto engine = make_engine(cfg);
  const Outcome o = run(*engine, greedy_request(kOnceUponATime, 123));
  ASSERT_EQ(o.tokens.size(), 123u);
  EXPECT_EQ(o.final_event.finish, FinishReason::kLength);
  // Nothing is evicted before 64 positions are written: outputs at
  // positions 5..64 are the golden ones as far as they go.
  EXPECT_EQ(std::vector<int32_t>(o.tokens.begin(), o.tokens.begin() + 60),
            std::vector<int32_t>(kGolden64.begin(), kGolden64.begin() + 60));
  EXPECT_EQ(engine->metrics().kv_evicted_blocks, 4);  // 8 blocks, 4 kept
  EXPECT_EQ(engine->metrics().preemptions, 0);
  expect_pool_whole(*engine);
}

TEST(KvEvictionEngine, SmallBudgetGeneratesToTheContextInABoundedPool) {
  EngineConfig cfg;
  cfg.kv_dtype = TensorType::kF32;
  cfg.kv_eviction = window(32);  // one sink block and one recent block
  cfg.scheduler.max_chunk_tokens = 16;
  // 2 budget blocks + 1 chunk block + 1: the whole 128-token history would
  // need 8. Without eviction the request is refused outright.
  cfg.n_kv_blocks = 4;
  auto engine = make_engine(cfg);
  const Outcome o = run(*engine, greedy_request(kOnceUponATime, 123));
  ASSERT_EQ(o.tokens.size(), 123u);  // to the 128-position context
  EXPECT_EQ(o.final_event.finish, FinishReason::kLength);
  // Logits of positions <= 32 were computed before the first eviction (after
  // the step that computed position 32): the outputs at positions 5..33 are
  // the golden ones.
  EXPECT_EQ(std::vector<int32_t>(o.tokens.begin(), o.tokens.begin() + 29),
            std::vector<int32_t>(kGolden64.begin(), kGolden64.begin() + 29));
  const EngineMetrics m = engine->metrics();
  EXPECT_EQ(m.kv_evicted_blocks, 6);  // blocks 1..6 of 8; block 0 (sinks) and 7 stay
  EXPECT_EQ(m.preemptions, 0);
  expect_pool_whole(*engine);

  EngineConfig none = cfg;
  none.kv_eviction = {};
  auto plain = make_engine(none);
  auto refused = plain->submit(greedy_request(kOnceUponATime, 123));
  EXPECT_EQ(refused.status().code(), StatusCode::kOutOfRange);
}

TEST(KvEvictionEngine, SmallBudgetInEveryFormatAndWithPromptsPastTheBudget) {
  for (TensorType dtype : {TensorType::kF16, TensorType::kQ8_0, TensorType::kQ4_0}) {
    EngineConfig cfg;
    cfg.kv_dtype = dtype;
    cfg.kv_eviction = dtype == TensorType::kQ8_0 ? snap(64, 16) : window(48, 16);
    cfg.scheduler.max_chunk_tokens = 24;
    cfg.scheduler.max_running = 4;
    cfg.n_kv_blocks = 24;
    auto engine = make_engine(cfg);
    std::vector<Submission> subs;
    for (uint64_t i = 0; i < 4; ++i) {
      auto s = engine->submit(greedy_request(synthetic_prompt(50 + 10 * i, i + 1), 40));
      ASSERT_TRUE(s.is_ok()) << s.status().to_string();
      subs.push_back(std::move(s).value());
    }
    for (Submission& s : subs) {
      const Outcome o = drain(*s.stream);
      EXPECT_EQ(o.final_event.finish, FinishReason::kLength) << tensor_type_name(dtype);
      for (int32_t t : o.tokens) EXPECT_TRUE(t >= 0 && t < 512);
    }
    EXPECT_GT(engine->metrics().kv_evicted_blocks, 0);
    expect_pool_whole(*engine);
  }
}

TEST(KvEvictionEngine, PreemptedGappedSequencesRecomputeAndFinish) {
  for (const kv::EvictionPolicy& policy : {window(32), snap(48)}) {
    EngineConfig cfg;
    cfg.kv_dtype = TensorType::kF16;
    cfg.kv_eviction = policy;
    cfg.scheduler.max_chunk_tokens = 16;
    cfg.scheduler.max_running = 8;
    cfg.n_kv_blocks = 9;  // 8 sequences of up to 5 blocks each: preemption
    auto engine = make_engine(cfg);
    std::vector<Submission> subs;
    for (uint64_t i = 0; i < 8; ++i) {
      auto s = engine->submit(greedy_request(synthetic_prompt(20 + 5 * i, i + 7), 60));
      ASSERT_TRUE(s.is_ok()) << s.status().to_string();
      subs.push_back(std::move(s).value());
    }
    for (Submission& s : subs) {
      const Outcome o = drain(*s.stream);
      EXPECT_EQ(o.final_event.finish, FinishReason::kLength) << kv::eviction_kind_name(policy.kind);
      EXPECT_EQ(o.tokens.size(), 60u);
    }
    EXPECT_GT(engine->metrics().preemptions, 0) << kv::eviction_kind_name(policy.kind);
    EXPECT_GT(engine->metrics().kv_evicted_blocks, 0);
    expect_pool_whole(*engine);
  }
}

TEST(KvEvictionEngine, RefusesABudgetBelowSinksPlusABlockAndSpeculation) {
  EngineConfig cfg;
  cfg.n_kv_blocks = 16;
  cfg.kv_eviction = window(31, 4);  // 4 sinks take a block of 16; needs 32
  auto e = Engine::create(*stories().model, cfg);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find(">= 32"), std::string::npos) << e.status().message();

  cfg.kv_eviction = window(64, 4);
  cfg.speculative.draft = std::make_shared<NgramDraft>();
  auto spec = Engine::create(*stories().model, cfg);
  ASSERT_FALSE(spec.is_ok());
  EXPECT_NE(spec.status().message().find("speculative"), std::string::npos);
}

}  // namespace
}  // namespace ladder::engine
