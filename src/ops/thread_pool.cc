// Persistent thread pool. A job is published as one 64-bit "claim" word
// (job id | unit count | next unit), a unit being `grain` items; any thread
// takes the next chunk with a compare-and-swap on it. Chunks are guided:
// each takes a share of what is left (remaining / (2 * threads)), so early
// chunks are large (few claims) and the last ones are one unit (no thread
// idles long waiting for a big tail chunk). The caller waits only for units
// to finish, never for every worker to notice the job, so a worker that the
// OS has descheduled (a shared, oversubscribed machine) cannot stall a
// dispatch: the caller simply runs the chunks itself. Idle workers spin
// briefly (kernels of a forward pass come microseconds apart), then yield,
// then sleep on a condition variable so an idle engine costs no CPU. Which
// thread runs which chunk never matters for results: kernels split over
// outputs only.
#include "ops/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "common/check.h"
#include "ops/simd_targets.h"

namespace ladder::ops {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Idle workers: pause-spin this many polls, then yield until kSpinTime has
// passed since the last job, then sleep.
constexpr int kPausePolls = 2000;
constexpr auto kSpinTime = std::chrono::microseconds(300);

// Claim word layout: [63..44] job id, [43..22] unit count, [21..0] next unit.
constexpr int kIdxBits = 22;
constexpr uint64_t kIdxMask = (uint64_t{1} << kIdxBits) - 1;
constexpr int64_t kMaxUnits = int64_t{1} << (kIdxBits - 1);
constexpr int kJobBits = 64 - 2 * kIdxBits;

inline uint64_t claim_next(uint64_t c) {
  return c & kIdxMask;
}
inline uint64_t claim_count(uint64_t c) {
  return (c >> kIdxBits) & kIdxMask;
}
inline bool claim_has_work(uint64_t c) {
  return claim_next(c) < claim_count(c);
}

}  // namespace

struct ThreadPool::Impl {
  int n_threads = 1;
  std::vector<std::thread> workers;

  std::mutex mu;
  std::condition_variable cv;
  std::atomic<uint64_t> claim{0};
  std::atomic<int64_t> done{0};  // units finished of the current job
  std::atomic<int> sleepers{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> busy{false};
  uint64_t job_id = 0;

  // The current job; stable while any of its units is unclaimed or running.
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0;
  int64_t unit = 1;

  // Claims and runs one chunk of the current job; false when none is left.
  bool run_one() {
    uint64_t c = claim.load(std::memory_order_acquire);
    while (claim_has_work(c)) {
      const uint64_t left = claim_count(c) - claim_next(c);
      const uint64_t take = std::max<uint64_t>(1, (left + static_cast<uint64_t>(n_threads) - 1) / static_cast<uint64_t>(n_threads));
      if (claim.compare_exchange_weak(c, c + take, std::memory_order_acq_rel, std::memory_order_acquire)) {
        const int64_t begin = static_cast<int64_t>(claim_next(c)) * unit;
        (*fn)(begin, std::min(n, begin + static_cast<int64_t>(take) * unit));
        done.fetch_add(static_cast<int64_t>(take), std::memory_order_acq_rel);
        return true;
      }
    }
    return false;
  }

  void wait_for_work() {
    const auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
    for (int i = 0;; ++i) {
      if (stop.load(std::memory_order_relaxed) || claim_has_work(claim.load(std::memory_order_acquire)))
        return;
      if (i < kPausePolls) {
        cpu_relax();
      } else if (std::chrono::steady_clock::now() < spin_until) {
        std::this_thread::yield();
      } else {
        break;
      }
    }
    sleepers.fetch_add(1);
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stop.load() || claim_has_work(claim.load()); });
    }
    sleepers.fetch_sub(1);
  }

  void worker_loop() {
    while (!stop.load(std::memory_order_relaxed)) {
      if (!run_one()) wait_for_work();
    }
  }
};

ThreadPool::ThreadPool(int n_threads) : impl_(std::make_unique<Impl>()) {
  log_chosen_target_once();
  if (n_threads <= 0) n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  impl_->n_threads = n_threads;
  impl_->workers.reserve(static_cast<size_t>(n_threads - 1));
  for (int i = 1; i < n_threads; ++i) impl_->workers.emplace_back([this] { impl_->worker_loop(); });
}

ThreadPool::~ThreadPool() {
  impl_->stop.store(true);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->cv.notify_all();
  }
  for (auto& t : impl_->workers) t.join();
}

int ThreadPool::size() const {
  return impl_->n_threads;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  Impl& p = *impl_;
  if (p.workers.empty() || n <= grain) {
    fn(0, n);
    return;
  }
  // Units of `grain` items (coarser when the range is too long for the claim word).
  const int64_t unit = grain * ((n + grain * kMaxUnits - 1) / (grain * kMaxUnits));
  const int64_t n_units = (n + unit - 1) / unit;
  LADDER_CHECK(!p.busy.exchange(true), "ThreadPool::parallel_for is not reentrant");
  p.fn = &fn;
  p.n = n;
  p.unit = unit;
  p.done.store(0, std::memory_order_relaxed);
  p.job_id = (p.job_id + 1) & ((uint64_t{1} << kJobBits) - 1);
  // seq_cst store: pairs with the sleepers check (a worker either sees the
  // job before sleeping or is counted in sleepers and gets notified).
  p.claim.store((p.job_id << (2 * kIdxBits)) | (static_cast<uint64_t>(n_units) << kIdxBits));
  if (p.sleepers.load() > 0) {
    std::lock_guard<std::mutex> lock(p.mu);
    p.cv.notify_all();
  }
  while (p.run_one()) {
  }
  for (int i = 0; p.done.load(std::memory_order_acquire) != n_units; ++i) {
    if (i < kPausePolls) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  p.fn = nullptr;
  p.busy.store(false);
}

}  // namespace ladder::ops
