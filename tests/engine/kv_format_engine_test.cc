// The quantized KV formats behind the engine: within a format, a request's
// tokens do not depend on batching, chunked prefill, preemption or prefix
// hits (batch invariance holds per format), every staging slot comes back,
// and the format's bytes decide how many blocks fit a memory budget.
#include <gtest/gtest.h>

#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "kv/kv_storage.h"
#include "ops/kv_codec.h"

namespace ladder::engine {
namespace {

using namespace ladder::engine::testing;  // NOLINT

// Twelve prompts of 5..90 tokens, a third sharing a 40-token prefix.
std::vector<std::vector<int32_t>> prompts() {
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < 12; ++i) {
    const size_t len = 5 + static_cast<size_t>((i * 37) % 86);
    std::vector<int32_t> p = synthetic_prompt(len, static_cast<uint64_t>(i) + 100);
    if (i % 3 == 1) {
      p = synthetic_prompt(40, 999);
      const auto suffix = synthetic_prompt(len / 2 + 2, static_cast<uint64_t>(i));
      p.insert(p.end(), suffix.begin() + 1, suffix.end());
    }
    out.push_back(std::move(p));
  }
  return out;
}

int64_t max_tokens_of(size_t i) {
  return 6 + static_cast<int64_t>(i * 13 % 25);
}

std::unique_ptr<kv::KvStorage> storage_for(TensorType dtype, int32_t n_blocks, int32_t n_staging) {
  const model::ModelConfig& mc = stories().model->config();
  kv::KvShape shape{.n_layers = static_cast<int>(mc.n_layers),
                    .n_kv_heads = static_cast<int>(mc.n_kv_heads),
                    .head_dim = static_cast<int>(mc.head_dim),
                    .block_size = 16,
                    .n_blocks = n_blocks,
                    .dtype = dtype,
                    .n_staging = n_staging};
  auto s = kv::make_arena_storage(shape);
  LADDER_CHECK(s.is_ok(), s.status().to_string());
  return std::move(s).value();
}

class KvFormatEngineTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(KvFormatEngineTest, MixedBatchUnderPressureMatchesSoloRunsInTheSameFormat) {
  const TensorType dtype = GetParam();
  const auto ps = prompts();
  std::vector<std::vector<int32_t>> solo;
  {
    EngineConfig cfg;
    cfg.kv_dtype = dtype;
    cfg.prefix_caching = false;
    auto engine = make_engine(cfg);
    EXPECT_EQ(engine->kv_format_name(), std::string(ops::kv_dtype_short_name(dtype)) + "-b16-kt");
    for (size_t i = 0; i < ps.size(); ++i)
      solo.push_back(run(*engine, greedy_request(ps[i], max_tokens_of(i))).tokens);
  }
  EngineConfig cfg;
  cfg.kv_dtype = dtype;
  cfg.scheduler.max_batch_tokens = 48;
  cfg.scheduler.max_chunk_tokens = 20;
  cfg.scheduler.max_running = 8;
  cfg.n_kv_blocks = 14;
  const int32_t n_staging = kv_staging_slots_for(cfg, 1);
  EXPECT_EQ(n_staging > 0, ops::kv_dtype_staged(dtype));
  auto storage = storage_for(dtype, 14, n_staging);
  const kv::KvStorage* raw = storage.get();
  auto engine = make_engine(cfg, std::move(storage));
  std::vector<Submission> subs;
  for (size_t i = 0; i < ps.size(); ++i) {
    auto s = engine->submit(greedy_request(ps[i], max_tokens_of(i)));
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    subs.push_back(*s);
  }
  for (size_t i = 0; i < ps.size(); ++i) EXPECT_EQ(drain(*subs[i].stream).tokens, solo[i]) << "request " << i;
  const EngineMetrics m = engine->metrics();
  EXPECT_GT(m.preemptions, 0);
  EXPECT_GT(m.prefix_hit_tokens, 0);
  expect_pool_whole(*engine);
  if (ops::kv_dtype_staged(dtype)) {
    EXPECT_EQ(raw->n_free_staging(), n_staging);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, KvFormatEngineTest, ::testing::Values(TensorType::kQ8_0, TensorType::kQ4_0),
                         [](const ::testing::TestParamInfo<TensorType>& p) {
                           return std::string(ops::kv_dtype_short_name(p.param));
                         });

TEST(KvFormatEngine, SmallerFormatsFitMoreBlocksInTheSameMemory) {
  int32_t blocks[4];
  const TensorType formats[] = {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0, TensorType::kQ4_0};
  for (int f = 0; f < 4; ++f) {
    EngineConfig cfg;
    cfg.kv_dtype = formats[f];
    cfg.n_kv_blocks = 0;
    cfg.kv_memory_bytes = size_t{4} << 20;
    auto e = Engine::create(*stories().model, cfg);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    blocks[f] = (*e)->n_kv_blocks();
  }
  // stories260K: 5 layers, 4 KV heads of 8 dims; per block of 16 tokens K+V
  // per layer: f32 4096, f16 2048, q8 16*4*(8+2)*2 = 1280, q4 K 4*8*(4+8) =
  // 384 + V 16*4*(4+4) = 512 -> 896 bytes. q4's staging slots (f16) come off
  // the budget first.
  EXPECT_EQ(blocks[0], (4 << 20) / (4096 * 5));
  EXPECT_EQ(blocks[1], (4 << 20) / (2048 * 5));
  EXPECT_EQ(blocks[2], (4 << 20) / (1280 * 5));
  // A q4 staging slot: 16 tokens x 32 dims in f16, K and V, 5 layers =
  // 10240 bytes; the default step budget and running cap would want 225 of
  // them, an eighth of the budget holds 51.
  EngineConfig q4;
  q4.kv_dtype = TensorType::kQ4_0;
  q4.kv_memory_bytes = size_t{4} << 20;
  EXPECT_EQ(kv_staging_slots_for(q4, 10240), 51);
  q4.kv_memory_bytes = size_t{1} << 30;
  EXPECT_EQ(kv_staging_slots_for(q4, 10240), 512 / 16 + 3 * 64 + 1);
  q4.kv_memory_bytes = 1;  // never below what one sequence's chunk needs
  EXPECT_EQ(kv_staging_slots_for(q4, 10240), 512 / 16 + 3);
  EXPECT_EQ(blocks[3], ((4 << 20) - 51 * 10240) / (896 * 5));
  EXPECT_GT(blocks[3], blocks[2]);
}

}  // namespace
}  // namespace ladder::engine
