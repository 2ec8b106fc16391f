// Roofline measurements: dispatch to roofline-inl.h and time with the pool.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/roofline.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "ops/roofline-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "ops/roofline.h"

namespace ladder::ops {

HWY_EXPORT(ReadSum);
HWY_EXPORT(Triad);
HWY_EXPORT(FmaChains);

namespace {

constexpr int kRepetitions = 5;
constexpr size_t kDefaultReadBytes = size_t{512} << 20;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Chunks of 64 KiB-aligned float ranges, so each thread streams long runs.
constexpr int64_t kGrainFloats = 16384;

}  // namespace

namespace {

// Best streaming read over n floats (n a multiple of kGrainFloats), GB/s.
double read_bandwidth(ThreadPool& pool, int64_t n) {
  double best = 0;
  auto buf = hwy::AllocateAligned<float>(static_cast<size_t>(n));
  // First touch from the pool's threads, like the kernels that will read it.
  pool.parallel_for(n, kGrainFloats,
                    [&](int64_t b, int64_t e) { std::fill(buf.get() + b, buf.get() + e, 1.0f); });
  const auto read_fn = HWY_DYNAMIC_DISPATCH(ReadSum);
  std::atomic<float> sink{0};
  for (int rep = 0; rep < kRepetitions; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(n, kGrainFloats, [&](int64_t b, int64_t e) {
      const float s = read_fn(buf.get() + b, e - b);
      sink.store(s, std::memory_order_relaxed);
    });
    best = std::max(best, static_cast<double>(n) * sizeof(float) / seconds_since(t0) / 1e9);
  }
  return best;
}

int64_t read_floats(size_t bytes) {
  if (bytes == 0) bytes = kDefaultReadBytes;
  return static_cast<int64_t>(bytes / sizeof(float)) / kGrainFloats * kGrainFloats;
}

}  // namespace

BandwidthResult measure_memory_bandwidth(ThreadPool& pool, size_t bytes) {
  const int64_t n = read_floats(bytes);
  BandwidthResult r;
  r.bytes = static_cast<size_t>(n) * sizeof(float);
  r.read_gbps = read_bandwidth(pool, n);

  // Triad over three arrays of a third of the read buffer each.
  const int64_t m = n / 3 / kGrainFloats * kGrainFloats;
  auto a = hwy::AllocateAligned<float>(static_cast<size_t>(m));
  auto b = hwy::AllocateAligned<float>(static_cast<size_t>(m));
  auto c = hwy::AllocateAligned<float>(static_cast<size_t>(m));
  pool.parallel_for(m, kGrainFloats, [&](int64_t lo, int64_t hi) {
    std::fill(a.get() + lo, a.get() + hi, 0.0f);
    std::fill(b.get() + lo, b.get() + hi, 1.0f);
    std::fill(c.get() + lo, c.get() + hi, 2.0f);
  });
  const auto triad_fn = HWY_DYNAMIC_DISPATCH(Triad);
  for (int rep = 0; rep < kRepetitions; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(m, kGrainFloats, [&](int64_t lo, int64_t hi) {
      triad_fn(a.get() + lo, b.get() + lo, c.get() + lo, 3.0f, hi - lo);
    });
    r.triad_gbps =
        std::max(r.triad_gbps, 3.0 * static_cast<double>(m) * sizeof(float) / seconds_since(t0) / 1e9);
  }
  return r;
}

double measure_peak_bandwidth_gbps(ThreadPool& pool, size_t bytes) {
  return read_bandwidth(pool, read_floats(bytes));
}

double measure_peak_gflops(ThreadPool& pool) {
  const auto fma_fn = HWY_DYNAMIC_DISPATCH(FmaChains);
  constexpr int64_t kIters = 20'000'000;
  double best = 0;
  std::atomic<float> sink{0};
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<double> flops(static_cast<size_t>(pool.size()), 0.0);
    const auto t0 = std::chrono::steady_clock::now();
    // One chunk per thread.
    pool.parallel_for(pool.size(), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        sink.store(fma_fn(kIters, static_cast<float>(i), &flops[static_cast<size_t>(i)]),
                   std::memory_order_relaxed);
      }
    });
    const double secs = seconds_since(t0);
    double total = 0;
    for (double f : flops) total += f;
    best = std::max(best, total / secs / 1e9);
  }
  return best;
}

}  // namespace ladder::ops
#endif  // HWY_ONCE
