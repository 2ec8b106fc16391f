// The scheduler's side of speculation: drafts ride in the step's token
// budget, never preempt, and their rejected positions' blocks go back to
// the pool (exact block ids, block size 4).
#include <gtest/gtest.h>

#include <vector>

#include "engine/scheduler.h"
#include "scheduler_test_util.h"

namespace ladder::engine {
namespace {

using testing::Ids;
using testing::table;
using testing::tokens;

struct SpecFixture {
  explicit SpecFixture(int32_t n_blocks, int64_t budget = 64)
      : kv(testing::tiny_kv(n_blocks, /*prefix_caching=*/true)), sched(config(budget), *kv) {}
  static SchedulerConfig config(int64_t budget) {
    SchedulerConfig c;
    c.max_batch_tokens = budget;
    c.context_length = 64;
    return c;
  }
  // Adds a 6-token prompt and runs its prefill, sampling `first`.
  void start(RequestId id, int32_t first, int64_t max_tokens = 30) {
    StopCriteria stop;
    stop.max_tokens = max_tokens;
    ASSERT_TRUE(sched.add(id, tokens(6), stop, {}, kv::BlockKey{}).is_ok());
    const SchedulerOutput out = sched.schedule();
    std::vector<int32_t> sampled(static_cast<size_t>(out.n_sampling()), first);
    sched.update_from_output(out, sampled);
  }
  std::unique_ptr<kv::KvCacheManager> kv;
  Scheduler sched;
};

TEST(SpeculativeScheduler, RejectedDraftPositionsGiveTheirBlocksBack) {
  SpecFixture f(16);
  f.start(1, 100);  // 7 tokens, 6 computed: blocks {0, 1}
  EXPECT_EQ(table(f.sched, 1), (Ids{0, 1}));
  ASSERT_TRUE(f.sched.set_draft(1, {101, 102, 103, 104, 105, 106, 107, 108}));
  const SchedulerOutput out = f.sched.schedule();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].start_pos, 6);
  EXPECT_EQ(out.chunks[0].n_tokens, 9);
  EXPECT_EQ(out.chunks[0].n_draft, 8);
  EXPECT_TRUE(out.chunks[0].sample);
  EXPECT_EQ(out.n_tokens, 9);
  // Positions 0..14 need four blocks.
  EXPECT_EQ(table(f.sched, 1), (Ids{0, 1, 2, 3}));
  EXPECT_EQ(f.kv->n_free_blocks(), 12);

  // Two accepted (101, 102), then a correction (7): KV holds positions 0..8.
  const std::vector<std::vector<int32_t>> emitted = {{101, 102, 7}};
  const auto updates = f.sched.update_from_runs(out, emitted);
  ASSERT_EQ(updates.size(), 3u);
  EXPECT_EQ(updates[2].token, 7);
  const Sequence* seq = f.sched.find(1);
  EXPECT_EQ(seq->n_computed, 9);
  EXPECT_EQ(seq->tokens.size(), 10u);
  EXPECT_TRUE(seq->draft.empty());
  EXPECT_EQ(table(f.sched, 1), (Ids{0, 1, 2}));  // block 3 held only rejected positions
  EXPECT_EQ(f.kv->n_free_blocks(), 13);
  EXPECT_EQ(f.kv->stats().blocks_used, 3);

  // Everything rejected: KV keeps exactly the verified last token.
  ASSERT_TRUE(f.sched.set_draft(1, {1, 2, 3, 4, 5, 6}));
  const SchedulerOutput out2 = f.sched.schedule();
  EXPECT_EQ(table(f.sched, 1), (Ids{0, 1, 2, 4}));  // block 3 went to the back of the free list
  const std::vector<std::vector<int32_t>> none = {{8}};
  f.sched.update_from_runs(out2, none);
  EXPECT_EQ(f.sched.find(1)->n_computed, 10);
  EXPECT_EQ(table(f.sched, 1), (Ids{0, 1, 2}));
  EXPECT_TRUE(f.sched.cancel(1));
  EXPECT_EQ(f.kv->stats().blocks_used, 0);
  EXPECT_EQ(f.kv->n_free_blocks(), 16);
}

TEST(SpeculativeScheduler, DraftsFitTheBudgetAndFreeBlocksAndNeverPreempt) {
  SpecFixture f(3, /*budget=*/6);
  f.start(1, 100, /*max_tokens=*/6);  // blocks {0, 1}
  ASSERT_TRUE(f.sched.set_draft(1, {1, 2, 3, 4, 5, 6, 7}));
  SchedulerOutput out = f.sched.schedule();
  // The budget is 6: the last token and five draft tokens (positions 6..11, block 2).
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].n_draft, 5);
  EXPECT_EQ(out.n_tokens, 6);
  EXPECT_EQ(f.sched.find(1)->draft, (std::vector<int32_t>{1, 2, 3, 4, 5}));
  const std::vector<std::vector<int32_t>> two = {{1, 2, 9}};
  f.sched.update_from_runs(out, two);
  EXPECT_EQ(f.sched.find(1)->n_computed, 9);
  EXPECT_EQ(table(f.sched, 1), (Ids{0, 1, 2}));

  // The pool is full (positions 12 and 13 would need a fourth block): the draft
  // is dropped, nothing is preempted, the last token is still decoded.
  ASSERT_TRUE(f.sched.set_draft(1, {1, 2, 3}));
  out = f.sched.schedule();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].n_draft, 0);
  EXPECT_TRUE(out.preempted.empty());
  EXPECT_TRUE(f.sched.find(1)->draft.empty());
}

TEST(SpeculativeScheduler, OnlyDecodingSequencesTakeDrafts) {
  SpecFixture f(16);
  StopCriteria stop;
  stop.max_tokens = 4;
  ASSERT_TRUE(f.sched.add(1, tokens(6), stop, {}, kv::BlockKey{}).is_ok());
  EXPECT_FALSE(f.sched.set_draft(1, {1}));  // waiting
  EXPECT_FALSE(f.sched.set_draft(2, {1}));  // unknown
}

TEST(SpeculativeScheduler, AFinishInsideTheAcceptedRunDropsTheRest) {
  SpecFixture f(16);
  StopCriteria stop;
  stop.max_tokens = 30;
  stop.stop_token_ids = {2};
  ASSERT_TRUE(f.sched.add(1, tokens(6), stop, {}, kv::BlockKey{}).is_ok());
  SchedulerOutput out = f.sched.schedule();
  f.sched.update_from_output(out, std::vector<int32_t>{100});
  ASSERT_TRUE(f.sched.set_draft(1, {5, 2, 6}));
  out = f.sched.schedule();
  const std::vector<std::vector<int32_t>> emitted = {{5, 2, 6, 9}};
  const auto updates = f.sched.update_from_runs(out, emitted);
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[1].finish, FinishReason::kStop);
  EXPECT_EQ(f.sched.find(1), nullptr);
  EXPECT_EQ(f.kv->stats().blocks_used, 0);
}

}  // namespace
}  // namespace ladder::engine
