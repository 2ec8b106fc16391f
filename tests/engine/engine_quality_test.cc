// The scheduler's choices (batching, chunked prefill, preemption, prefix
// hits) must be invisible in the tokens: the model is batch-invariant, so
// every request produces exactly what it produces alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "model/synth.h"

namespace ladder::engine {
namespace {

using namespace ladder::engine::testing;  // NOLINT

struct Case {
  std::vector<int32_t> prompt;
  int64_t max_tokens;
  int32_t priority;
};

std::vector<Case> mixed_cases() {
  std::vector<Case> cases;
  for (int i = 0; i < 32; ++i) {
    Case c;
    // Prompt lengths 5..94, outputs 4..33 (the model's context is 128), three
    // priority classes.
    const size_t len = 5 + static_cast<size_t>((i * 37) % 90);
    c.prompt = i % 4 == 0 ? kOnceUponATime : synthetic_prompt(len, static_cast<uint64_t>(i));
    if (i % 4 == 2) {
      // A shared 40-token prefix (two full blocks and a half) so that cache
      // hits, preemption and recompute mix.
      std::vector<int32_t> p = synthetic_prompt(40, 999);
      const auto suffix = synthetic_prompt(len / 2 + 2, static_cast<uint64_t>(i));
      p.insert(p.end(), suffix.begin() + 1, suffix.end());
      c.prompt = std::move(p);
    }
    c.max_tokens = 4 + (i * 29) % 30;
    c.priority = i % 3;
    cases.push_back(std::move(c));
  }
  return cases;
}

// Every case run alone on a roomy engine: the reference.
std::vector<std::vector<int32_t>> solo_runs_on(Engine& engine) {
  std::vector<std::vector<int32_t>> out;
  for (const Case& c : mixed_cases()) out.push_back(run(engine, greedy_request(c.prompt, c.max_tokens)).tokens);
  expect_pool_whole(engine);
  return out;
}

EngineConfig solo_config() {
  EngineConfig cfg;
  cfg.n_kv_blocks = 64;
  cfg.prefix_caching = false;
  return cfg;
}

// On stories260K, computed once.
const std::vector<std::vector<int32_t>>& solo_runs() {
  static const auto* solo = [] {
    auto engine = make_engine(solo_config());
    return new std::vector<std::vector<int32_t>>(solo_runs_on(*engine));
  }();
  return *solo;
}

// All 32 together on `engine` (16 blocks of 16 for 32 requests of up to 127
// tokens forces preemption; a 48-token budget with 20-token chunks forces
// chunked prefill): each must produce its solo tokens.
void expect_mixed_batch_matches_solo(Engine& engine, const std::vector<std::vector<int32_t>>& solo = solo_runs()) {
  const std::vector<Case> cases = mixed_cases();
  std::vector<Submission> subs;
  for (const Case& c : cases) {
    Request r = greedy_request(c.prompt, c.max_tokens);
    r.scheduling.priority = c.priority;
    auto s = engine.submit(r);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    subs.push_back(*s);
  }
  int64_t preempted_requests = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Outcome o = drain(*subs[i].stream);
    EXPECT_EQ(o.tokens, solo[i]) << "request " << i;
    EXPECT_EQ(o.final_event.finish, FinishReason::kLength);
    if (o.final_event.n_preemptions > 0) ++preempted_requests;
  }
  const EngineMetrics m = engine.metrics();
  EXPECT_GT(m.preemptions, 0);
  EXPECT_GT(preempted_requests, 0);
  EXPECT_GT(m.prefix_hit_tokens, 0);
  EXPECT_EQ(m.finished_requests, 32);
  expect_pool_whole(engine);
}

EngineConfig pressure_config() {
  EngineConfig cfg;
  cfg.n_kv_blocks = 16;
  cfg.scheduler.max_batch_tokens = 48;
  cfg.scheduler.max_chunk_tokens = 20;
  cfg.scheduler.max_running = 16;
  return cfg;
}

// Another architecture of stories260K's vocabulary size and context, run
// solo and then mixed under preemption and prefix hits: the same tokens.
void expect_architecture_matches_its_solo_runs(const std::string& arch, int64_t window) {
  model::SynthOptions o;
  o.arch = arch;
  o.sliding_window = window;
  o.dim = 64, o.n_layers = 2, o.n_heads = 4, o.n_kv_heads = 2, o.ffn_dim = 128, o.n_vocab = 512;
  o.context_length = 128;
  o.init_std = 0.08f;
  o.seed = 21;
  const std::string path = ladder::testing::temp_dir() + "/" + arch + ".gguf";
  ASSERT_TRUE(model::write_synthetic_model(o, path).is_ok());
  auto file = gguf::GgufFile::open(path);
  ASSERT_TRUE(file.is_ok());
  auto loaded = model::LlamaModel::load(*file);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
  auto engine_on = [&](EngineConfig cfg) {
    cfg.n_threads = 2;
    cfg.model_digest = arch;
    auto e = Engine::create(**loaded, cfg);
    EXPECT_TRUE(e.is_ok()) << e.status().message();
    return std::move(e).value();
  };
  auto solo_engine = engine_on(solo_config());
  const auto solo = solo_runs_on(*solo_engine);
  EXPECT_NE(solo, solo_runs()) << "a different model, different tokens";
  size_t generated = 0, asked = 0;
  for (size_t i = 0; i < solo.size(); ++i) generated += solo[i].size(), asked += mixed_cases()[i].max_tokens;
  EXPECT_GT(generated, asked / 2) << "most requests run to their length, past the window";
  auto engine = engine_on(pressure_config());
  expect_mixed_batch_matches_solo(*engine, solo);
}

// qwen3: per-head Q/K norms, NeoX RoPE.
TEST(EngineQuality, AQwen3ModelUnderPreemptionAndPrefixHitsMatchesItsSoloRuns) {
  expect_architecture_matches_its_solo_runs("qwen3", 0);
}

// gemma2 with a 16-position window on every other layer (shorter than the
// prompts plus their outputs): prefix hits reuse blocks the window has
// passed, preemption recomputes them, and the tokens stay the solo ones.
TEST(EngineQuality, AGemma2ModelWithASlidingWindowUnderPreemptionAndPrefixHitsMatchesItsSoloRuns) {
  expect_architecture_matches_its_solo_runs("gemma2", 16);
}

TEST(EngineQuality, ThirtyTwoMixedRequestsUnderPreemptionMatchTheirSoloRuns) {
  // The golden request is among the references and right.
  EXPECT_EQ(solo_runs()[0], std::vector<int32_t>(kGolden64.begin(), kGolden64.begin() + mixed_cases()[0].max_tokens));
  auto engine = make_engine(pressure_config());
  expect_mixed_batch_matches_solo(*engine);
}

// A second storage behind the KV cache manager: each layer's K and V in its
// own plain vector (not one arena), counting the bytes the manager asks it to
// move. The engine and the model see it only through ops::PagedKv.
class VectorKvStorage final : public kv::KvStorage {
 public:
  explicit VectorKvStorage(const kv::KvShape& shape) : shape_(shape) {
    const size_t block = *kv::kv_layer_block_bytes(shape);
    for (int l = 0; l < shape.n_layers; ++l) {
      for (int side = 0; side < 2; ++side) {
        bytes_.emplace_back(block * static_cast<size_t>(shape.n_blocks), uint8_t{0});
        ops::PagedKvLayer layer{bytes_.back().data(), block, shape.block_size, shape.n_kv_heads, shape.head_dim,
                                shape.dtype, side == 0 ? ops::KvLayout::kDimMajor : ops::KvLayout::kTokenMajor};
        (side == 0 ? layers_.k : layers_.v).push_back(layer);
      }
    }
  }
  const kv::KvShape& shape() const override { return shape_; }
  const ops::PagedKv& layers() const override { return layers_; }
  void copy_block(kv::BlockId from, kv::BlockId to) override {
    for (const auto* side : {&layers_.k, &layers_.v}) {
      for (const ops::PagedKvLayer& l : *side) {
        std::copy_n(l.base + static_cast<size_t>(from) * l.block_stride_bytes, l.block_stride_bytes,
                    l.base + static_cast<size_t>(to) * l.block_stride_bytes);
        bytes_moved += l.block_stride_bytes;
      }
    }
  }
  // Bytes of this storage the model has written (nonzero), for the test.
  size_t nonzero_bytes() const {
    size_t n = 0;
    for (const auto& v : bytes_) n += static_cast<size_t>(std::count_if(v.begin(), v.end(), [](uint8_t b) { return b != 0; }));
    return n;
  }
  size_t bytes_moved = 0;

 private:
  kv::KvShape shape_;
  std::deque<std::vector<uint8_t>> bytes_;  // [n_layers * 2], stable addresses
  ops::PagedKv layers_;
};

TEST(EngineQuality, ASecondStorageBehindTheManagerServesTheSameTokens) {
  const model::ModelConfig& mc = stories().model->config();
  kv::KvShape shape{.n_layers = static_cast<int>(mc.n_layers), .n_kv_heads = static_cast<int>(mc.n_kv_heads),
                    .head_dim = static_cast<int>(mc.head_dim), .block_size = 16, .n_blocks = 16,
                    .dtype = TensorType::kF16};
  auto storage = std::make_unique<VectorKvStorage>(shape);
  const VectorKvStorage* raw = storage.get();
  auto engine = make_engine(pressure_config(), std::move(storage));
  EXPECT_EQ(engine->kv_format_name(), "f16-b16-kt");
  expect_mixed_batch_matches_solo(*engine);
  EXPECT_GT(raw->nonzero_bytes(), 0u);  // the model wrote its KV there
  EXPECT_EQ(raw->bytes_moved, 0u);      // no sequence forked: nothing copied
}

TEST(EngineQuality, PrefixCacheSkipsTheSharedPrefixOnlyWithinATenant) {
  EngineConfig cfg;
  cfg.n_kv_blocks = 128;
  auto engine = make_engine(cfg);
  // The model's context is 128 tokens, so the shared prefix is 96 (6 full
  // blocks); the scheduler tests cover longer chains.
  const std::vector<int32_t> prefix = synthetic_prompt(96, 77);
  auto with_suffix = [&](std::vector<int32_t> suffix) {
    std::vector<int32_t> p = prefix;
    p.insert(p.end(), suffix.begin(), suffix.end());
    return p;
  };
  const std::vector<int32_t> first = with_suffix({300, 301, 302, 303, 304, 305, 306, 307, 308, 309});
  const std::vector<int32_t> second =
      with_suffix({400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411});
  constexpr int64_t kMaxTokens = 8;

  const Outcome a = run(*engine, greedy_request(first, kMaxTokens, "tenant-a"));
  EXPECT_EQ(a.final_event.usage.cached_prompt_tokens, 0);
  const EngineMetrics before = engine->metrics();

  const Outcome b = run(*engine, greedy_request(second, kMaxTokens, "tenant-a"));
  const EngineMetrics after_b = engine->metrics();
  EXPECT_EQ(b.final_event.usage.cached_prompt_tokens, 96);
  EXPECT_EQ(after_b.prefix_hit_tokens - before.prefix_hit_tokens, 96);
  // Only the 12-token suffix was prefilled, then 7 decode steps.
  EXPECT_EQ(after_b.computed_tokens - before.computed_tokens, 12 + (kMaxTokens - 1));

  const Outcome c = run(*engine, greedy_request(second, kMaxTokens, "tenant-b"));
  const EngineMetrics after_c = engine->metrics();
  EXPECT_EQ(c.final_event.usage.cached_prompt_tokens, 0);
  EXPECT_EQ(after_c.prefix_hit_tokens, after_b.prefix_hit_tokens);
  EXPECT_EQ(after_c.computed_tokens - after_b.computed_tokens,
            static_cast<int64_t>(second.size()) + kMaxTokens - 1);

  // A hit never changes the output: tenant-b computed everything itself.
  EXPECT_EQ(b.tokens, c.tokens);
  EngineConfig no_cache = cfg;
  no_cache.prefix_caching = false;
  auto plain = make_engine(no_cache);
  EXPECT_EQ(run(*plain, greedy_request(second, kMaxTokens)).tokens, b.tokens);
  EXPECT_EQ(run(*plain, greedy_request(first, kMaxTokens)).tokens, a.tokens);
  expect_pool_whole(*plain);

  // The same prompt again hits all but its last block's worth (the last
  // token must be computed to have logits).
  const Outcome d = run(*engine, greedy_request(second, kMaxTokens, "tenant-a"));
  EXPECT_EQ(d.final_event.usage.cached_prompt_tokens, 96);
  EXPECT_EQ(d.tokens, b.tokens);
  expect_pool_whole(*engine);
  EXPECT_GT(engine->metrics().kv_blocks_cached, 0);
}

TEST(EngineQuality, CachedPrefixHitsWhileTheOwnerIsStillRunning) {
  EngineConfig cfg;
  cfg.n_kv_blocks = 64;
  auto engine = make_engine(cfg);
  const std::vector<int32_t> prompt = synthetic_prompt(60, 5);
  auto long_one = engine->submit(greedy_request(prompt, 60, "t"));
  ASSERT_TRUE(long_one.is_ok());
  auto first_token = long_one->stream->next_for(std::chrono::seconds(60));  // prefill done
  ASSERT_TRUE(first_token.has_value());
  const Outcome second = run(*engine, greedy_request(prompt, 5, "t"));
  EXPECT_EQ(second.final_event.usage.cached_prompt_tokens, 48);
  Outcome first = drain(*long_one->stream);
  first.tokens.insert(first.tokens.begin(), first_token->token.token);
  ASSERT_EQ(first.tokens.size(), 60u);
  EXPECT_EQ(second.tokens, std::vector<int32_t>(first.tokens.begin(), first.tokens.begin() + 5));
  expect_pool_whole(*engine);
}

TEST(EngineQuality, F16KvIsBatchInvariantToo) {
  EngineConfig cfg;
  cfg.kv_dtype = TensorType::kF16;
  cfg.n_kv_blocks = 12;
  cfg.scheduler.max_batch_tokens = 32;
  cfg.prefix_caching = false;
  auto engine = make_engine(cfg);
  std::vector<Request> requests;
  for (uint64_t i = 0; i < 8; ++i)
    requests.push_back(greedy_request(synthetic_prompt(20 + 9 * i, 40 + i), 30));
  std::vector<std::vector<int32_t>> solo;
  for (const Request& r : requests) solo.push_back(run(*engine, r).tokens);
  std::vector<Submission> subs;
  for (const Request& r : requests) subs.push_back(*engine->submit(r));
  for (size_t i = 0; i < subs.size(); ++i)
    EXPECT_EQ(drain(*subs[i].stream).tokens, solo[i]) << "request " << i;
  EXPECT_GT(engine->metrics().preemptions, 0);
  expect_pool_whole(*engine);
  // Half-precision KV is close to F32 on this model: the golden prefix holds.
  const Outcome golden = run(*engine, greedy_request(kOnceUponATime, 16));
  EXPECT_EQ(golden.tokens, std::vector<int32_t>(kGolden64.begin(), kGolden64.begin() + 16));
  expect_pool_whole(*engine);
}

}  // namespace
}  // namespace ladder::engine
