// The scheduler under a KV eviction policy: a sequence whose history
// outgrows its budget keeps decoding with exact, bounded block tables, is
// admitted even where its whole history would not fit the pool, and leaves
// the pool whole when it finishes or is cancelled.
#include <gtest/gtest.h>

#include <vector>

#include "engine/scheduler.h"
#include "scheduler_test_util.h"

namespace ladder::engine {
namespace {

using testing::Ids;
using testing::max_tokens;
using testing::table;
using testing::tokens;
constexpr kv::BlockId G = kv::kNoBlock;

std::unique_ptr<kv::KvCacheManager> kv_manager(int32_t n_blocks, const kv::EvictionPolicy& policy) {
  return testing::tiny_kv(n_blocks, /*prefix_caching=*/true, policy);
}

const kv::EvictionPolicy kWindow{.kind = kv::EvictionKind::kWindow, .budget_tokens = 12, .sink_tokens = 4};

SchedulerConfig config() {
  SchedulerConfig c;
  c.max_batch_tokens = 8;
  c.context_length = 128;
  return c;
}

const kv::BlockKey kNs = kv::namespace_digest({"t", "m", "t", "f32-b4"});

// Runs one step, sampling token 7 for every sampling chunk.
std::vector<SequenceUpdate> step(Scheduler& s, SchedulerOutput* out = nullptr) {
  SchedulerOutput o = s.schedule();
  std::vector<int32_t> sampled(static_cast<size_t>(o.n_sampling()), 7);
  auto updates = s.update_from_output(o, sampled);
  if (out != nullptr) *out = o;
  return updates;
}

TEST(SchedulerEviction, DecodesPastTheBudgetWithExactBoundedTables) {
  // 6 blocks of 4 tokens: 10 prompt + 40 output tokens would need 13.
  auto kv = kv_manager(6, kWindow);
  Scheduler s(config(), *kv);
  ASSERT_TRUE(s.validate(10, max_tokens(40)).is_ok());
  ASSERT_TRUE(s.add(1, tokens(10), max_tokens(40), {}, kNs).is_ok());
  SchedulerOutput o;
  step(s, &o);  // prefill chunk of 8: blocks 0, 1
  EXPECT_EQ(o.chunks[0].n_tokens, 8);
  EXPECT_EQ(table(s, 1), (Ids{0, 1}));
  step(s, &o);  // the last 2 prompt tokens, first sample: 10 computed, 3 blocks = the budget
  EXPECT_EQ(table(s, 1), (Ids{0, 1, 2}));
  step(s);  // 11 computed
  step(s);  // 12 computed
  EXPECT_EQ(table(s, 1), (Ids{0, 1, 2}));
  step(s);  // position 12 opens block 3; block 1 falls out of the window
  EXPECT_EQ(table(s, 1), (Ids{0, G, 2, 3}));
  EXPECT_EQ(kv->pool().ref_count(1), 0);
  int steps = 5;
  std::vector<SequenceUpdate> u;
  do {
    u = step(s);
    ++steps;
    if (s.find(1) != nullptr) {
      EXPECT_LE(kv->live_blocks(1), 3) << "step " << steps;
      EXPECT_EQ(table(s, 1)[0], 0) << "the sink block stays";
    }
  } while (u.empty() || u.back().finish == FinishReason::kNone);
  EXPECT_EQ(u.back().finish, FinishReason::kLength);
  EXPECT_EQ(s.find(1), nullptr);
  EXPECT_EQ(kv->n_free_blocks(), 6);
  EXPECT_EQ(kv->stats().blocks_used, 0);
  EXPECT_EQ(s.n_preemptions(), 0);
}

TEST(SchedulerEviction, AdmitsWhatFitsTheBudgetNotTheWholeHistory) {
  // Budget 3 blocks + a chunk of 8 tokens (2 blocks) + 1 = 6 blocks at most.
  auto kv = kv_manager(6, kWindow);
  Scheduler s(config(), *kv);
  EXPECT_TRUE(s.validate(100, max_tokens(27)).is_ok());
  auto none = kv_manager(6, kv::EvictionPolicy{});
  Scheduler plain(config(), *none);
  EXPECT_EQ(plain.validate(100, max_tokens(27)).code(), StatusCode::kOutOfRange);
  auto tiny = kv_manager(5, kWindow);
  Scheduler small(config(), *tiny);
  EXPECT_EQ(small.validate(100, max_tokens(27)).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(small.validate(10, max_tokens(10)).is_ok());  // 5 blocks hold the whole of it
}

TEST(SchedulerEviction, CancelOfAGappedSequenceFreesEveryBlock) {
  auto kv = kv_manager(6, kWindow);
  Scheduler s(config(), *kv);
  ASSERT_TRUE(s.add(1, tokens(20), max_tokens(40), {}, kNs).is_ok());
  step(s);
  step(s);
  step(s);  // 20 prompt tokens in chunks of 8: 5 blocks written, 2 evicted
  EXPECT_EQ(table(s, 1), (Ids{0, G, G, 3, 4}));
  EXPECT_TRUE(s.cancel(1));
  EXPECT_EQ(kv->n_free_blocks(), 6);
  EXPECT_EQ(kv->stats().blocks_used, 0);
}

}  // namespace
}  // namespace ladder::engine
