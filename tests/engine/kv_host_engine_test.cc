// The host KV tier behind the engine with the real stories260K model: six
// prompt families whose prefixes (23 blocks of 16) exceed a 12-block pool,
// replayed three rounds. Without the tier the pool's LRU loses every prefix
// before its family comes back; with it every later round hits, the
// generated ids are the same in every KV format, and the family built from
// the golden ids continues them exactly. Requests sent together wait in the
// scheduler, where their blocks are prefetched.
#include <gtest/gtest.h>

#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "kv/kv_format.h"

namespace ladder::engine {
namespace {

using namespace ladder::engine::testing;  // NOLINT

constexpr int kRounds = 3;
constexpr int kFamilies = 6;  // 5 synthetic prefixes of 4 blocks, and the golden one
constexpr int32_t kPoolBlocks = 12;

// Family 5: BOS + "Once upon a time" + the first 59 golden ids (64 tokens,
// 3 blocks before the last token), continued by the last 5 golden ids.
// Families 0..4: a 64-token prefix of their own and an 8-token suffix that
// differs every round.
Request request(int round, int family) {
  if (family == kFamilies - 1) {
    std::vector<int32_t> p = kOnceUponATime;
    p.insert(p.end(), kGolden64.begin(), kGolden64.begin() + 59);
    return greedy_request(std::move(p), 5);
  }
  std::vector<int32_t> p = synthetic_prompt(64, 1000 + static_cast<uint64_t>(family));
  const std::vector<int32_t> suffix = synthetic_prompt(9, 7 * static_cast<uint64_t>(round) + family + 1);
  p.insert(p.end(), suffix.begin() + 1, suffix.end());
  return greedy_request(std::move(p), 4);
}

EngineConfig config(TensorType dtype, size_t host_bytes) {
  EngineConfig cfg;
  cfg.kv_dtype = dtype;
  cfg.n_kv_blocks = kPoolBlocks;  // a request takes 5
  cfg.kv_host_bytes = host_bytes;
  return cfg;
}

// Room for every prefix block (23) and then some.
size_t host_bytes_for(TensorType dtype, int blocks) {
  const model::ModelConfig& mc = stories().model->config();
  auto b = kv::kv_block_bytes({.n_layers = static_cast<int>(mc.n_layers),
                               .n_kv_heads = static_cast<int>(mc.n_kv_heads),
                               .head_dim = static_cast<int>(mc.head_dim),
                               .block_size = 16,
                               .dtype = dtype});
  LADDER_CHECK(b.is_ok(), b.status().to_string());
  return *b * static_cast<size_t>(blocks);
}

// Each request after the previous one finished; outputs in request order.
std::vector<std::vector<int32_t>> one_by_one(Engine& engine) {
  std::vector<std::vector<int32_t>> out;
  for (int r = 0; r < kRounds; ++r) {
    for (int f = 0; f < kFamilies; ++f) out.push_back(run(engine, request(r, f)).tokens);
  }
  return out;
}

// Each round's requests sent together.
std::vector<std::vector<int32_t>> by_rounds(Engine& engine) {
  std::vector<std::vector<int32_t>> out;
  for (int r = 0; r < kRounds; ++r) {
    std::vector<std::shared_ptr<TokenStream>> streams;
    for (int f = 0; f < kFamilies; ++f) {
      auto s = engine.submit(request(r, f));
      EXPECT_TRUE(s.is_ok()) << s.status().to_string();
      if (s.is_ok()) streams.push_back(s->stream);
    }
    for (auto& s : streams) out.push_back(drain(*s).tokens);
  }
  return out;
}

void expect_golden_family(const std::vector<std::vector<int32_t>>& outputs) {
  const std::vector<int32_t> golden_tail(kGolden64.begin() + 59, kGolden64.end());
  for (int r = 0; r < kRounds; ++r) EXPECT_EQ(outputs[static_cast<size_t>(r * kFamilies + kFamilies - 1)], golden_tail) << r;
}

TEST(KvHostEngine, PrefixesBeyondThePoolHitTheTierAndOutputsStayTheSame) {
  for (TensorType dtype : {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0, TensorType::kQ4_0}) {
    SCOPED_TRACE(tensor_type_name(dtype));
    auto without = make_engine(config(dtype, 0));
    const auto plain = one_by_one(*without);
    auto with = make_engine(config(dtype, host_bytes_for(dtype, 32)));
    const auto tiered = one_by_one(*with);
    EXPECT_EQ(tiered, plain);
    if (!kv::kv_format_is_approximate(dtype)) expect_golden_family(tiered);

    const EngineMetrics a = without->metrics();
    const EngineMetrics b = with->metrics();
    // Between two requests of a family, five others take 25 blocks of 12:
    // the pool alone never keeps a prefix that long.
    EXPECT_EQ(a.prefix_hit_tokens, 0);
    EXPECT_EQ(a.kv_host.bytes_capacity, 0);
    // With the tier, rounds 2 and 3 hit every prefix block: 2 x (5 x 4 + 3)
    // blocks of 16 tokens, each copied back from the tier by the step that
    // admits its request or, when the request arrived before the previous
    // step ended, ahead of it. Round 1 computes its 23.
    EXPECT_EQ(b.prefix_hit_tokens, 2 * 23 * 16);
    EXPECT_EQ(b.kv_host.prefetched_late_blocks + b.kv_host.prefetched_blocks, 46);
    EXPECT_EQ(b.kv_host.recomputed_blocks, 23);
    // Each distinct published block (4 per family: the golden family's
    // fourth is full of prompt too) is copied out once at most (the tier
    // keeps what it copies back).
    EXPECT_GT(b.kv_host.offloaded_blocks, 0);
    EXPECT_LE(b.kv_host.offloaded_blocks, 24);
    EXPECT_EQ(b.kv_host.dropped_blocks, 0);
    EXPECT_EQ(b.kv_host.bytes_used, b.kv_host.blocks * static_cast<int64_t>(host_bytes_for(dtype, 1)));
    EXPECT_EQ(b.kv_host.bytes_capacity, static_cast<int64_t>(host_bytes_for(dtype, 32)));
    EXPECT_EQ(b.computed_tokens, a.computed_tokens - 2 * 23 * 16);
    expect_pool_whole(*without);
    expect_pool_whole(*with);
  }
}

TEST(KvHostEngine, WaitingRequestsArePrefetched) {
  auto reference = make_engine(config(TensorType::kF16, 0));
  const auto plain = one_by_one(*reference);

  EngineConfig cfg = config(TensorType::kF16, host_bytes_for(TensorType::kF16, 32));
  cfg.scheduler.max_running = 3;
  cfg.scheduler.max_batch_tokens = 32;  // newcomers wait behind running prefills
  auto engine = make_engine(cfg);
  const auto together = by_rounds(*engine);
  EXPECT_EQ(together, plain);
  expect_golden_family(together);
  cfg.kv_host_bytes = 0;
  auto untiered = make_engine(cfg);
  EXPECT_EQ(by_rounds(*untiered), plain);
  const EngineMetrics m = engine->metrics();
  EXPECT_GT(m.kv_host.prefetched_blocks, 0);
  EXPECT_GT(m.prefix_hit_tokens, untiered->metrics().prefix_hit_tokens);
  expect_pool_whole(*engine);
  expect_pool_whole(*untiered);
}

TEST(KvHostEngine, ATierThatHoldsNoBlockOrHasNoPrefixCacheIsRefused) {
  EngineConfig cfg = config(TensorType::kF16, host_bytes_for(TensorType::kF16, 1) - 1);
  cfg.n_threads = 1;
  auto e = Engine::create(*stories().model, cfg);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("holds not one KV block"), std::string::npos) << e.status().message();
  cfg.kv_host_bytes = host_bytes_for(TensorType::kF16, 4);
  cfg.prefix_caching = false;
  e = Engine::create(*stories().model, cfg);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.status().message().find("prefix cache"), std::string::npos) << e.status().message();
}

}  // namespace
}  // namespace ladder::engine
