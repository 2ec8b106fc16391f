#include "ops/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace ladder::ops {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {1, 2, 7, 64, 1000, 4097}) {
      for (int64_t grain : {1, 3, 16}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << n << " " << grain;
      }
    }
  }
}

TEST(ThreadPool, ChunksAreGrainMultiplesExceptTheLast) {
  ThreadPool pool(3);
  std::mutex mu;
  std::set<std::pair<int64_t, int64_t>> chunks;
  pool.parallel_for(1003, 16, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    chunks.insert({b, e});
  });
  int64_t expect_begin = 0;
  for (const auto& [b, e] : chunks) {
    EXPECT_EQ(b, expect_begin);
    EXPECT_EQ(b % 16, 0);
    if (e != 1003) {
      EXPECT_EQ((e - b) % 16, 0);
    }
    expect_begin = e;
  }
  EXPECT_EQ(expect_begin, 1003);
}

TEST(ThreadPool, EmptyRangeRunsNothing) {
  ThreadPool pool(2);
  int calls = 0;
  pool.parallel_for(0, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ThreadPool, WorkersReallyRunInParallel) {
  ThreadPool pool(2);
  std::mutex mu;
  std::set<std::thread::id> ids;
  // Each chunk waits until two distinct threads have shown up (bounded).
  std::atomic<int> arrived{0};
  pool.parallel_for(2, 1, [&](int64_t, int64_t) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    }
    arrived.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (arrived.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  });
  EXPECT_EQ(ids.size(), 2u);
}

TEST(ThreadPool, WakesUpAfterSleepingAndSurvivesManyDispatches) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // workers go to sleep
    for (int i = 0; i < 2000; ++i) {
      pool.parallel_for(8, 1, [&](int64_t b, int64_t e) { sum.fetch_add(e - b); });
    }
  }
  EXPECT_EQ(sum.load(), 3 * 2000 * 8);
}

// Back-to-back dispatches with no sleep between them: each one's work is done
// once and only once. What a dispatch costs is a benchmark's question
// (bench/ops_bench.cc, BM_PoolDispatch), not a test's: a timed bound
// fails on a busy machine and passes a slow pool on a fast one.
TEST(ThreadPool, BackToBackDispatchesEachRunOnce) {
  ThreadPool pool(2);
  std::atomic<int64_t> sink{0};
  constexpr int kCalls = 20000;
  for (int i = 0; i < kCalls; ++i) pool.parallel_for(2, 1, [&](int64_t b, int64_t e) { sink.fetch_add(e - b); });
  EXPECT_EQ(sink.load(), 2 * kCalls);
}

}  // namespace
}  // namespace ladder::ops
