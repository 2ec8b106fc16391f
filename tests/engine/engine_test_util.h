// Helpers for the engine tests that run the real stories260K model.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "model/llama_model.h"
#include "test_support.h"

namespace ladder::engine::testing {

// BOS + "Once upon a time" and its first 64 greedy ids (shared/models/README.md,
// from an independent reference implementation).
inline const std::vector<int32_t>& kOnceUponATime = ladder::testing::kStoriesPrompt;
inline const std::vector<int32_t>& kGolden64 = ladder::testing::kStoriesGolden64;

// The model, loaded once per test binary.
struct Stories {
  gguf::GgufFile file;
  std::unique_ptr<model::LlamaModel> model;
};
inline const Stories& stories() {
  static const Stories* s = [] {
    auto file = gguf::GgufFile::open(ladder::testing::shared_path("models/stories260K.gguf"));
    LADDER_CHECK(file.is_ok(), file.status().to_string());
    auto* out = new Stories{std::move(file).value(), nullptr};
    auto model = model::LlamaModel::load(out->file);
    LADDER_CHECK(model.is_ok(), model.status().to_string());
    out->model = std::move(model).value();
    return out;
  }();
  return *s;
}

inline std::unique_ptr<Engine> make_engine(EngineConfig cfg, std::unique_ptr<kv::KvStorage> storage = nullptr) {
  if (cfg.n_threads == 0) cfg.n_threads = 2;
  if (cfg.n_kv_blocks == 0) cfg.n_kv_blocks = 64;  // 1024 positions: room for any test here
  if (cfg.model_digest.empty()) cfg.model_digest = "stories260K";
  auto e = Engine::create(*stories().model, cfg, std::move(storage));
  LADDER_CHECK(e.is_ok(), e.status().to_string());
  return std::move(e).value();
}

inline Request greedy_request(std::vector<int32_t> prompt, int64_t max_tokens, std::string scope = "tenant") {
  Request r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.stop.max_tokens = max_tokens;
  r.cache_scope = std::move(scope);
  return r;
}

struct Outcome {
  std::vector<int32_t> tokens;
  std::vector<SampledToken> details;
  StreamEvent final_event;
};

// Reads a stream to its final event (fails the test after 120 s).
inline Outcome drain(TokenStream& stream) {
  Outcome o;
  while (true) {
    auto e = stream.next_for(std::chrono::seconds(120));
    if (!e) {
      ADD_FAILURE() << "stream stalled";
      return o;
    }
    if (e->kind == StreamEvent::Kind::kFinished) {
      o.final_event = std::move(*e);
      return o;
    }
    o.tokens.push_back(e->token.token);
    o.details.push_back(std::move(e->token));
  }
}

inline Outcome run(Engine& engine, Request r) {
  auto s = engine.submit(std::move(r));
  if (!s.is_ok()) {
    ADD_FAILURE() << s.status().to_string();
    return {};
  }
  return drain(*s->stream);
}

// Every engine test ends here: nothing is in flight, and every KV block is
// free again (cached blocks count as free).
inline void expect_pool_whole(const Engine& engine) {
  const EngineMetrics m = engine.metrics();
  EXPECT_EQ(m.kv_blocks_used, 0);
  EXPECT_EQ(m.kv_blocks_free, m.kv_blocks_total);
  EXPECT_EQ(m.running, 0);
  EXPECT_EQ(m.queue_depth, 0);
}

// Deterministic pseudo-random prompt tokens in [3, 512) (ids 0..2 are
// unk/bos/eos in the stories vocabulary), after a BOS.
inline std::vector<int32_t> synthetic_prompt(size_t n, uint64_t seed) {
  std::vector<int32_t> t = {1};
  uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  while (t.size() < n) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    t.push_back(static_cast<int32_t>(3 + (x >> 33) % 509));
  }
  return t;
}

}  // namespace ladder::engine::testing
