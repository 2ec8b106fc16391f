#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "scheduler_test_util.h"

namespace ladder::engine {
namespace {

using std::chrono::seconds;
using testing::Ids;
using testing::max_tokens;
using testing::table;
using testing::tokens;

const auto kStart = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);

kv::BlockKey ns(const std::string& scope) {
  return kv::namespace_digest({scope, "m", "t", "f32-b4"});
}

void expect_chunk(const ScheduledChunk& c, RequestId id, int64_t start, int64_t n, bool sample) {
  EXPECT_EQ(c.id, id);
  EXPECT_EQ(c.start_pos, start) << "request " << id;
  EXPECT_EQ(c.n_tokens, n) << "request " << id;
  EXPECT_EQ(c.sample, sample) << "request " << id;
}

struct Fixture {
  Fixture(int32_t n_blocks, SchedulerConfig cfg, bool with_cache = false)
      : kv(testing::tiny_kv(n_blocks, with_cache)), pool(kv->pool()), sched(cfg, *kv) {}
  std::unique_ptr<kv::KvCacheManager> kv;
  const kv::BlockPool& pool;
  Scheduler sched;
};

SchedulerConfig config(int64_t budget, int64_t context = 64) {
  SchedulerConfig c;
  c.max_batch_tokens = budget;
  c.context_length = context;
  return c;
}

TEST(Scheduler, BudgetCoversPrefillChunksAndDecodesWithExactBlocks) {
  Fixture f(16, config(12));
  ASSERT_TRUE(f.sched.add(1, tokens(10), max_tokens(8), {}, ns("a")).is_ok());
  ASSERT_TRUE(f.sched.add(2, tokens(6), max_tokens(8), {}, ns("a")).is_ok());

  SchedulerOutput o = f.sched.schedule();
  ASSERT_EQ(o.chunks.size(), 2u);
  expect_chunk(o.chunks[0], 1, 0, 10, true);
  expect_chunk(o.chunks[1], 2, 0, 2, false);  // the 2 tokens left in the budget
  EXPECT_EQ(o.n_tokens, 12);
  EXPECT_EQ(table(f.sched, 1), (Ids{0, 1, 2}));
  EXPECT_EQ(table(f.sched, 2), (Ids{3}));
  auto u = f.sched.update_from_output(o, std::vector<int32_t>{100});
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].id, 1u);
  EXPECT_EQ(u[0].token, 100);
  EXPECT_EQ(u[0].finish, FinishReason::kNone);

  o = f.sched.schedule();
  ASSERT_EQ(o.chunks.size(), 2u);
  expect_chunk(o.chunks[0], 1, 10, 1, true);  // decode
  expect_chunk(o.chunks[1], 2, 2, 4, true);   // rest of the prefill
  EXPECT_EQ(o.n_tokens, 5);
  EXPECT_EQ(table(f.sched, 2), (Ids{3, 4}));
  f.sched.update_from_output(o, std::vector<int32_t>{101, 200});

  o = f.sched.schedule();
  expect_chunk(o.chunks[0], 1, 11, 1, true);
  expect_chunk(o.chunks[1], 2, 6, 1, true);
  f.sched.update_from_output(o, std::vector<int32_t>{102, 201});
  o = f.sched.schedule();
  expect_chunk(o.chunks[0], 1, 12, 1, true);  // position 12 opens a fourth block
  EXPECT_EQ(table(f.sched, 1), (Ids{0, 1, 2, 5}));
  EXPECT_EQ(table(f.sched, 2), (Ids{3, 4}));
  const Sequence* s1 = f.sched.find(1);
  EXPECT_EQ(std::vector<int32_t>(s1->output().begin(), s1->output().end()),
            (std::vector<int32_t>{100, 101, 102}));
}

TEST(Scheduler, DecodesGoFirstAndPrefillTakesTheRestOfTheBudget) {
  Fixture f(32, config(8));
  for (RequestId id = 1; id <= 3; ++id)
    ASSERT_TRUE(f.sched.add(id, tokens(2), max_tokens(8), {}, ns("a")).is_ok());
  auto o = f.sched.schedule();
  EXPECT_EQ(o.n_tokens, 6);
  f.sched.update_from_output(o, std::vector<int32_t>{1, 1, 1});
  ASSERT_TRUE(f.sched.add(4, tokens(20), max_tokens(8), {}, ns("a")).is_ok());
  o = f.sched.schedule();
  ASSERT_EQ(o.chunks.size(), 4u);
  for (size_t i = 0; i < 3; ++i) expect_chunk(o.chunks[i], i + 1, 2, 1, true);
  expect_chunk(o.chunks[3], 4, 0, 5, false);
  EXPECT_EQ(table(f.sched, 4), (Ids{3, 4}));
}

TEST(Scheduler, MaxChunkTokensSplitsAPrefill) {
  SchedulerConfig c = config(64);
  c.max_chunk_tokens = 4;
  Fixture f(8, c);
  ASSERT_TRUE(f.sched.add(7, tokens(10), max_tokens(1), {}, ns("a")).is_ok());
  auto o = f.sched.schedule();
  expect_chunk(o.chunks[0], 7, 0, 4, false);
  f.sched.update_from_output(o, {});
  o = f.sched.schedule();
  expect_chunk(o.chunks[0], 7, 4, 4, false);
  f.sched.update_from_output(o, {});
  o = f.sched.schedule();
  expect_chunk(o.chunks[0], 7, 8, 2, true);
  EXPECT_EQ(table(f.sched, 7), (Ids{0, 1, 2}));
  auto u = f.sched.update_from_output(o, std::vector<int32_t>{5});
  EXPECT_EQ(u[0].finish, FinishReason::kLength);
  EXPECT_EQ(f.pool.n_free(), 8);
}

TEST(Scheduler, PriorityThenEarliestDeadlineThenArrival) {
  Fixture f(64, config(4));
  ASSERT_TRUE(f.sched.add(1, tokens(4), max_tokens(1), {0, kStart + seconds(30)}, ns("a")).is_ok());
  ASSERT_TRUE(f.sched.add(2, tokens(4), max_tokens(1), {0, kStart + seconds(10)}, ns("a")).is_ok());
  ASSERT_TRUE(f.sched.add(3, tokens(4), max_tokens(1), {1, {}}, ns("a")).is_ok());
  ASSERT_TRUE(f.sched.add(4, tokens(4), max_tokens(1), {}, ns("a")).is_ok());
  ASSERT_TRUE(f.sched.add(5, tokens(4), max_tokens(1), {0, kStart + seconds(10)}, ns("a")).is_ok());
  EXPECT_EQ(f.sched.waiting_ids(), (std::vector<RequestId>{3, 2, 5, 1, 4}));
  // A budget of one prompt per step serves them in that order.
  std::vector<RequestId> served;
  while (f.sched.has_work()) {
    auto o = f.sched.schedule();
    ASSERT_EQ(o.chunks.size(), 1u);
    served.push_back(o.chunks[0].id);
    f.sched.update_from_output(o, std::vector<int32_t>{0});
  }
  EXPECT_EQ(served, (std::vector<RequestId>{3, 2, 5, 1, 4}));
  EXPECT_EQ(f.pool.n_used(), 0);
}

TEST(Scheduler, PreemptsLowestPriorityThenLatestDeadlineAndRecomputes) {
  Fixture f(6, config(64));
  ASSERT_TRUE(f.sched.add(1, tokens(8, 100), max_tokens(8), {0, kStart + seconds(10)}, ns("a")).is_ok());
  ASSERT_TRUE(f.sched.add(2, tokens(8, 200), max_tokens(8), {0, kStart + seconds(20)}, ns("a")).is_ok());
  ASSERT_TRUE(f.sched.add(3, tokens(8, 300), max_tokens(8), {1, {}}, ns("a")).is_ok());
  auto o = f.sched.schedule();
  ASSERT_EQ(o.chunks.size(), 3u);
  EXPECT_EQ(table(f.sched, 3), (Ids{0, 1}));
  EXPECT_EQ(table(f.sched, 1), (Ids{2, 3}));
  EXPECT_EQ(table(f.sched, 2), (Ids{4, 5}));
  f.sched.update_from_output(o, std::vector<int32_t>{31, 11, 21});  // chunk order 3, 1, 2
  EXPECT_EQ(f.pool.n_free(), 0);

  // Position 8 needs a third block each. Victim: priority 0 with the latest
  // deadline (2), not 3, whose deadline is later but whose priority is higher.
  o = f.sched.schedule();
  EXPECT_EQ(o.preempted, (std::vector<RequestId>{2}));
  ASSERT_EQ(o.chunks.size(), 2u);
  expect_chunk(o.chunks[0], 3, 8, 1, true);
  expect_chunk(o.chunks[1], 1, 8, 1, true);
  EXPECT_EQ(table(f.sched, 3), (Ids{0, 1, 4}));
  EXPECT_EQ(table(f.sched, 1), (Ids{2, 3, 5}));
  EXPECT_EQ(table(f.sched, 2), Ids{});
  EXPECT_EQ(f.sched.n_preemptions(), 1);
  EXPECT_EQ(f.sched.waiting_ids(), (std::vector<RequestId>{2}));
  f.sched.update_from_output(o, std::vector<int32_t>{32, 12});

  // No room yet: 2 waits.
  o = f.sched.schedule();
  ASSERT_EQ(o.chunks.size(), 2u);
  f.sched.update_from_output(o, std::vector<int32_t>{33, 13});

  // 3 goes away; 2 is recomputed from position 0: prompt + its one output token.
  ASSERT_TRUE(f.sched.cancel(3));
  EXPECT_EQ(f.pool.free_list(), (Ids{0, 1, 4}));
  o = f.sched.schedule();
  ASSERT_EQ(o.chunks.size(), 2u);
  expect_chunk(o.chunks[0], 1, 10, 1, true);
  expect_chunk(o.chunks[1], 2, 0, 9, true);
  EXPECT_EQ(table(f.sched, 2), (Ids{0, 1, 4}));
  f.sched.update_from_output(o, std::vector<int32_t>{14, 22});
  const Sequence* s2 = f.sched.find(2);
  EXPECT_EQ(std::vector<int32_t>(s2->output().begin(), s2->output().end()), (std::vector<int32_t>{21, 22}));
  EXPECT_EQ(s2->n_preemptions, 1);
  EXPECT_FALSE(f.sched.cancel(3));
  ASSERT_TRUE(f.sched.cancel(1));
  ASSERT_TRUE(f.sched.cancel(2));
  EXPECT_EQ(f.pool.n_free(), 6);
}

TEST(Scheduler, PreemptsItselfWhenItIsTheLowest) {
  Fixture f(4, config(64));
  ASSERT_TRUE(f.sched.add(1, tokens(6), max_tokens(2), {1, {}}, ns("a")).is_ok());
  ASSERT_TRUE(f.sched.add(2, tokens(8), max_tokens(4), {0, {}}, ns("a")).is_ok());
  auto o = f.sched.schedule();
  EXPECT_EQ(table(f.sched, 1), (Ids{0, 1}));
  EXPECT_EQ(table(f.sched, 2), (Ids{2, 3}));
  f.sched.update_from_output(o, std::vector<int32_t>{1, 2});
  // 1 decodes inside its second block; 2 needs a third, none is free, and it
  // is itself the lowest: it steps back instead of taking 1's blocks.
  o = f.sched.schedule();
  EXPECT_EQ(o.preempted, (std::vector<RequestId>{2}));
  ASSERT_EQ(o.chunks.size(), 1u);
  expect_chunk(o.chunks[0], 1, 6, 1, true);
  EXPECT_EQ(f.pool.free_list(), (Ids{2, 3}));
  // 1 finishes; 2 comes back with its output token recomputed.
  auto u = f.sched.update_from_output(o, std::vector<int32_t>{3});
  EXPECT_EQ(u[0].finish, FinishReason::kLength);
  o = f.sched.schedule();
  ASSERT_EQ(o.chunks.size(), 1u);
  expect_chunk(o.chunks[0], 2, 0, 9, true);
  EXPECT_EQ(table(f.sched, 2), (Ids{2, 3, 0}));
}

TEST(Scheduler, AHigherPriorityArrivalDisplacesLowerRunningSequences) {
  Fixture f(4, config(64));
  ASSERT_TRUE(f.sched.add(1, tokens(12), max_tokens(4), {0, {}}, ns("a")).is_ok());
  auto o = f.sched.schedule();
  EXPECT_EQ(table(f.sched, 1), (Ids{0, 1, 2}));
  f.sched.update_from_output(o, std::vector<int32_t>{7});
  // Same priority, later: waits for blocks (1's decode takes the last free
  // block 3; 2 needs two).
  ASSERT_TRUE(f.sched.add(2, tokens(8), max_tokens(4), {0, {}}, ns("a")).is_ok());
  o = f.sched.schedule();
  EXPECT_TRUE(o.preempted.empty());
  ASSERT_EQ(o.chunks.size(), 1u);
  expect_chunk(o.chunks[0], 1, 12, 1, true);
  EXPECT_EQ(table(f.sched, 1), (Ids{0, 1, 2, 3}));
  f.sched.update_from_output(o, std::vector<int32_t>{8});
  // Higher priority: takes 1's place at once and goes first.
  ASSERT_TRUE(f.sched.add(3, tokens(8), max_tokens(4), {5, {}}, ns("a")).is_ok());
  o = f.sched.schedule();
  EXPECT_EQ(o.preempted, (std::vector<RequestId>{1}));
  ASSERT_EQ(o.chunks.size(), 2u);
  expect_chunk(o.chunks[0], 3, 0, 8, true);
  expect_chunk(o.chunks[1], 2, 0, 8, true);  // 1 freed enough for 2 as well
  EXPECT_EQ(table(f.sched, 3), (Ids{0, 1}));
  EXPECT_EQ(table(f.sched, 2), (Ids{2, 3}));
  EXPECT_EQ(f.sched.waiting_ids(), (std::vector<RequestId>{1}));
  EXPECT_EQ(f.sched.find(1)->n_preemptions, 1);
}

TEST(Scheduler, AHigherPriorityArrivalTakesARunningSlot) {
  SchedulerConfig c = config(64);
  c.max_running = 1;
  Fixture f(16, c);
  ASSERT_TRUE(f.sched.add(1, tokens(4), max_tokens(4), {0, kStart + seconds(50)}, ns("a")).is_ok());
  f.sched.update_from_output(f.sched.schedule(), std::vector<int32_t>{1});
  // Same priority, earlier deadline: outranks 1, so it takes the slot.
  ASSERT_TRUE(f.sched.add(2, tokens(4), max_tokens(4), {0, kStart + seconds(5)}, ns("a")).is_ok());
  auto o = f.sched.schedule();
  EXPECT_EQ(o.preempted, (std::vector<RequestId>{1}));
  ASSERT_EQ(o.chunks.size(), 1u);
  expect_chunk(o.chunks[0], 2, 0, 4, true);
  // A later deadline does not displace anyone.
  f.sched.update_from_output(o, std::vector<int32_t>{2});
  ASSERT_TRUE(f.sched.add(3, tokens(4), max_tokens(4), {0, kStart + seconds(60)}, ns("a")).is_ok());
  o = f.sched.schedule();
  EXPECT_TRUE(o.preempted.empty());
  ASSERT_EQ(o.chunks.size(), 1u);
  expect_chunk(o.chunks[0], 2, 4, 1, true);
  EXPECT_EQ(f.sched.waiting_ids(), (std::vector<RequestId>{1, 3}));
}

TEST(Scheduler, FinishesOnMaxTokensStopIdsAndContext) {
  Fixture f(16, config(64, /*context=*/8));
  StopCriteria stop = max_tokens(3);
  stop.stop_token_ids = {99};
  ASSERT_TRUE(f.sched.add(1, tokens(2), stop, {}, ns("a")).is_ok());
  ASSERT_TRUE(f.sched.add(2, tokens(2), stop, {}, ns("a")).is_ok());
  ASSERT_TRUE(f.sched.add(3, tokens(6), max_tokens(100), {}, ns("a")).is_ok());
  auto u = f.sched.update_from_output(f.sched.schedule(), std::vector<int32_t>{5, 99, 7});
  EXPECT_EQ(u[0].finish, FinishReason::kNone);
  EXPECT_EQ(u[1].finish, FinishReason::kStop);
  EXPECT_EQ(u[2].finish, FinishReason::kNone);
  u = f.sched.update_from_output(f.sched.schedule(), std::vector<int32_t>{5, 7});
  EXPECT_EQ(u[1].finish, FinishReason::kLength);  // 8 tokens fill the context
  u = f.sched.update_from_output(f.sched.schedule(), std::vector<int32_t>{5});
  EXPECT_EQ(u[0].finish, FinishReason::kLength);  // third output token
  EXPECT_FALSE(f.sched.has_work());
  EXPECT_EQ(f.pool.n_free(), 16);
}

TEST(Scheduler, RejectsBadBounds) {
  Fixture f(4, config(64, 32));
  EXPECT_EQ(f.sched.add(1, {}, max_tokens(1), {}, ns("a")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.sched.add(1, tokens(4), max_tokens(0), {}, ns("a")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.sched.add(1, tokens(32), max_tokens(1), {}, ns("a")).code(), StatusCode::kOutOfRange);
  // 12 + 8 tokens need 5 blocks of 4; the pool has 4.
  EXPECT_EQ(f.sched.add(1, tokens(12), max_tokens(8), {}, ns("a")).code(), StatusCode::kOutOfRange);
  ASSERT_TRUE(f.sched.add(1, tokens(12), max_tokens(4), {}, ns("a")).is_ok());
  EXPECT_EQ(f.sched.add(1, tokens(2), max_tokens(1), {}, ns("a")).code(), StatusCode::kInvalidArgument);
}

TEST(Scheduler, PrefixHitsSkipPrefillPerTenantAndNeverCoverTheLastToken) {
  Fixture f(8, config(64), /*with_cache=*/true);
  ASSERT_TRUE(f.sched.add(1, tokens(12), max_tokens(1), {}, ns("a")).is_ok());
  auto o = f.sched.schedule();
  expect_chunk(o.chunks[0], 1, 0, 12, true);
  EXPECT_EQ(table(f.sched, 1), (Ids{0, 1, 2}));
  f.sched.update_from_output(o, std::vector<int32_t>{50});
  EXPECT_EQ(f.pool.n_used(), 0);
  EXPECT_EQ(f.pool.free_list(), (Ids{3, 4, 5, 6, 7, 0, 1, 2}));

  std::vector<int32_t> diverging = tokens(8);
  for (int32_t t : {90, 91, 92}) diverging.push_back(t);
  ASSERT_TRUE(f.sched.add(2, diverging, max_tokens(1), {}, ns("a")).is_ok());
  ASSERT_TRUE(f.sched.add(3, tokens(12), max_tokens(1), {}, ns("a")).is_ok());
  ASSERT_TRUE(f.sched.add(4, tokens(12), max_tokens(1), {}, ns("b")).is_ok());
  o = f.sched.schedule();
  ASSERT_EQ(o.chunks.size(), 3u);
  expect_chunk(o.chunks[0], 2, 8, 3, true);   // 2 blocks hit
  expect_chunk(o.chunks[1], 3, 8, 4, true);   // 3 blocks cached, but the last token must run
  expect_chunk(o.chunks[2], 4, 0, 12, true);  // another tenant: no hit
  EXPECT_EQ(table(f.sched, 2), (Ids{0, 1, 3}));
  EXPECT_EQ(table(f.sched, 3), (Ids{0, 1, 4}));
  EXPECT_EQ(table(f.sched, 4), (Ids{5, 6, 7}));
  EXPECT_EQ(f.pool.ref_count(0), 2);
  EXPECT_EQ(f.sched.find(2)->prefix_hit_tokens, 8);
  EXPECT_EQ(f.sched.find(4)->prefix_hit_tokens, 0);
  EXPECT_EQ(f.sched.prefix_hit_tokens(), 16);
  f.sched.update_from_output(o, std::vector<int32_t>{1, 2, 3});
  EXPECT_EQ(f.pool.n_used(), 0);
  EXPECT_FALSE(f.sched.has_work());
}

SchedulingClass tenant(int32_t t) {
  SchedulingClass c;
  c.tenant = t;
  return c;
}

TEST(Scheduler, AReservedTenantKeepsItsShareOfEveryStepUnderAFlood) {
  SchedulerConfig c = config(12);
  c.tenant_token_share = {0.5, 0.0};  // tenant 0 holds 6 of the 12 tokens
  Fixture f(32, c);
  for (RequestId id = 1; id <= 3; ++id) ASSERT_TRUE(f.sched.add(id, tokens(10), max_tokens(4), tenant(1), ns("b")).is_ok());
  ASSERT_TRUE(f.sched.add(4, tokens(8), max_tokens(4), tenant(0), ns("a")).is_ok());
  auto o = f.sched.schedule();
  // Without the hold, requests 1 and 2 would take all 12 tokens.
  ASSERT_EQ(o.chunks.size(), 2u);
  expect_chunk(o.chunks[0], 1, 0, 6, false);
  expect_chunk(o.chunks[1], 4, 0, 6, false);
  f.sched.update_from_output(o, {});
  o = f.sched.schedule();
  // Tenant 0 needs only 2 more: its hold shrinks to that; the rest is the flood's.
  ASSERT_EQ(o.chunks.size(), 3u);
  expect_chunk(o.chunks[0], 1, 6, 4, true);
  expect_chunk(o.chunks[1], 2, 0, 6, false);
  expect_chunk(o.chunks[2], 4, 6, 2, true);
  EXPECT_EQ(o.n_tokens, 12);
}

TEST(Scheduler, AHoldCountsOnlyWaitingSequencesThatHaveARunningSlot) {
  SchedulerConfig c = config(12);
  c.max_running = 2;
  c.tenant_token_share = {0.5, 0.0};
  Fixture f(32, c);
  ASSERT_TRUE(f.sched.add(1, tokens(4), max_tokens(4), tenant(1), ns("b")).is_ok());
  ASSERT_TRUE(f.sched.add(2, tokens(4), max_tokens(4), tenant(1), ns("b")).is_ok());
  f.sched.update_from_output(f.sched.schedule(), std::vector<int32_t>{1, 1});
  // Tenant 0's newcomer cannot run (no slot), so nothing is held for it.
  ASSERT_TRUE(f.sched.add(3, tokens(20), max_tokens(4), tenant(0), ns("a")).is_ok());
  auto o = f.sched.schedule();
  ASSERT_EQ(o.chunks.size(), 2u);
  expect_chunk(o.chunks[0], 1, 4, 1, true);
  expect_chunk(o.chunks[1], 2, 4, 1, true);
  EXPECT_EQ(f.sched.waiting_ids(), (std::vector<RequestId>{3}));
}

TEST(Scheduler, AnUnusedHoldGoesBackToTheRunningSequencesItKeptOut) {
  SchedulerConfig c = config(4);
  c.max_running = 3;
  c.tenant_token_share = {0.75, 0.0};  // 3 of 4 tokens
  Fixture f(4, c);
  ASSERT_TRUE(f.sched.add(1, tokens(10), max_tokens(4), tenant(1), ns("b")).is_ok());
  ASSERT_TRUE(f.sched.add(2, tokens(2, 50), max_tokens(4), tenant(1), ns("b")).is_ok());
  auto o = f.sched.schedule();
  expect_chunk(o.chunks[0], 1, 0, 4, false);
  f.sched.update_from_output(o, {});
  o = f.sched.schedule();
  expect_chunk(o.chunks[0], 1, 4, 4, false);
  f.sched.update_from_output(o, {});
  o = f.sched.schedule();
  ASSERT_EQ(o.chunks.size(), 2u);
  expect_chunk(o.chunks[0], 1, 8, 2, true);
  expect_chunk(o.chunks[1], 2, 0, 2, true);
  f.sched.update_from_output(o, std::vector<int32_t>{7, 8});
  EXPECT_EQ(f.pool.n_free(), 0);
  // Tenant 0 arrives; 3 tokens are held for it, so request 2 is kept out of
  // the first pass -- but 3 finds no free block. Its hold goes back and
  // request 2 decodes in the second pass; 3 waits (no overtaking by newcomers).
  ASSERT_TRUE(f.sched.add(3, tokens(4, 90), max_tokens(4), tenant(0), ns("a")).is_ok());
  o = f.sched.schedule();
  ASSERT_EQ(o.chunks.size(), 2u);
  expect_chunk(o.chunks[0], 1, 10, 1, true);
  expect_chunk(o.chunks[1], 2, 2, 1, true);
  EXPECT_EQ(f.sched.waiting_ids(), (std::vector<RequestId>{3}));
  EXPECT_TRUE(o.preempted.empty());
}

}  // namespace
}  // namespace ladder::engine
