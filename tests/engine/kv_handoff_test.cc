// The engine's rung-2 entry points on the real stories260K model: a request
// with export_kv hands out its prompt's full blocks; another engine given
// them (kv_import) takes them instead of computing them and continues with
// exactly the golden tokens; blocks under another tenant's scope are refused
// (and computed), and every block is free at the end.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace ladder::engine::testing {
namespace {

// BOS + "Once upon a time" + its first 40 golden ids: 45 tokens, so two full
// 16-token blocks lie before the last token.
std::vector<int32_t> long_prompt() {
  std::vector<int32_t> p = kOnceUponATime;
  p.insert(p.end(), kGolden64.begin(), kGolden64.begin() + 40);
  return p;
}

std::shared_ptr<const kv::KvBlockSet> exported(Engine& e, const std::string& scope) {
  Request r = greedy_request(long_prompt(), 1, scope);
  r.export_kv = true;
  auto sub = e.submit(std::move(r));
  EXPECT_TRUE(sub.is_ok()) << sub.status().to_string();
  std::shared_ptr<const kv::KvBlockSet> blocks;
  while (auto ev = sub->stream->next_for(std::chrono::seconds(60))) {
    if (ev->kind == StreamEvent::Kind::kToken && ev->kv_export) blocks = ev->kv_export;
    if (ev->kind == StreamEvent::Kind::kFinished) break;
  }
  return blocks;
}

TEST(KvHandoff, ImportedBlocksContinueWithTheGoldenTokens) {
  auto prefill = make_engine({});
  auto blocks = exported(*prefill, "alpha");
  ASSERT_NE(blocks, nullptr);
  EXPECT_EQ(blocks->n_blocks(), 2u);
  EXPECT_EQ(blocks->first_block, 0);
  EXPECT_EQ(blocks->model_digest, "stories260K");
  EXPECT_EQ(prefill->metrics().kv_blocks_used, 0);

  auto decode = make_engine({});
  Request r = greedy_request(long_prompt(), 20, "alpha");
  r.kv_import = blocks;
  auto sub = decode->submit(std::move(r));
  ASSERT_TRUE(sub.is_ok());
  const Outcome o = drain(*sub->stream);
  const std::vector<int32_t> want(kGolden64.begin() + 40, kGolden64.begin() + 60);
  EXPECT_EQ(o.tokens, want);
  EXPECT_EQ(o.final_event.usage.cached_prompt_tokens, 32);
  const EngineMetrics m = decode->metrics();
  EXPECT_EQ(m.kv_imported_blocks, 2);
  EXPECT_EQ(m.kv_refused_blocks, 0);
  EXPECT_EQ(m.computed_tokens, 45 - 32 + 19);  // the prompt past the blocks, then one token per step
  EXPECT_EQ(m.kv_blocks_used, 0);
}

TEST(KvHandoff, AnotherTenantsBlocksAreRefusedAndComputed) {
  auto prefill = make_engine({});
  auto blocks = exported(*prefill, "alpha");
  ASSERT_NE(blocks, nullptr);
  auto decode = make_engine({});
  Request r = greedy_request(long_prompt(), 8, "beta");
  r.kv_import = blocks;
  auto sub = decode->submit(std::move(r));
  ASSERT_TRUE(sub.is_ok());
  const Outcome o = drain(*sub->stream);
  EXPECT_EQ(o.tokens, std::vector<int32_t>(kGolden64.begin() + 40, kGolden64.begin() + 48));
  EXPECT_EQ(o.final_event.usage.cached_prompt_tokens, 0);
  const EngineMetrics m = decode->metrics();
  EXPECT_EQ(m.kv_imported_blocks, 0);
  EXPECT_EQ(m.kv_refused_blocks, 2);
  EXPECT_EQ(m.kv_blocks_used, 0);
}

}  // namespace
}  // namespace ladder::engine::testing
