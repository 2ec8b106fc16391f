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
#include <memory>
#include <vector>

#include "common/check.h"
#include "common/page_memory.h"
#include "hwy/aligned_allocator.h"
#include "ops/amx.h"
#include "ops/roofline.h"
#include "ops/simd_targets.h"

namespace ladder::ops {

HWY_EXPORT(ReadSum);
HWY_EXPORT(Triad);
HWY_EXPORT(FmaChains);
HWY_EXPORT(Int8DotChains);

namespace {

constexpr int kRepetitions = 3;
constexpr size_t kDefaultReadBytes = size_t{512} << 20;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Chunks of 64 KiB-aligned float ranges, so each thread streams long runs.
constexpr int64_t kGrainFloats = 16384;

int64_t read_floats(size_t bytes) {
  if (bytes == 0) bytes = kDefaultReadBytes;
  return static_cast<int64_t>(bytes / sizeof(float)) / kGrainFloats * kGrainFloats;
}

// A read buffer first touched by the pool's threads, like the kernels'
// weights. The strategies read n - kSlackFloats floats, so a prefetch up to
// 1 MiB ahead stays inside the allocation.
constexpr int64_t kSlackFloats = (int64_t{1} << 20) / static_cast<int64_t>(sizeof(float));

// On the kind of pages the packed weights get (common/page_memory.h): huge
// pages where granted, which some machines stream faster.
struct ReadBuffer {
  PageMemory memory;
  float* data = nullptr;
  int64_t n = 0;  // floats timed

  ReadBuffer(ThreadPool& pool, int64_t floats) : n(floats) {
    const int64_t total = floats + kSlackFloats;
    memory = PageMemory::map(static_cast<size_t>(total) * sizeof(float), PageMemory::Pages::kHuge);
    LADDER_CHECK(!memory.empty(), "cannot map the bandwidth probe's buffer");
    data = reinterpret_cast<float*>(memory.data());
    pool.parallel_for(total, kGrainFloats, [&](int64_t b, int64_t e) { std::fill(data + b, data + e, 1.0f); });
  }
};

// Best of `reps` streaming reads of buf under one strategy, GB/s.
double read_best(ThreadPool& pool, const ReadBuffer& buf, StreamStrategy s, int reps) {
  const auto read_fn = HWY_DYNAMIC_DISPATCH(ReadSum);
  std::atomic<float> sink{0};
  double best = 0;
  for (int rep = 0; rep < reps; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(buf.n, kGrainFloats, [&](int64_t b, int64_t e) {
      sink.store(read_fn(buf.data + b, e - b, s), std::memory_order_relaxed);
    });
    best = std::max(best, static_cast<double>(buf.n) * sizeof(float) / seconds_since(t0) / 1e9);
  }
  return best;
}

// Every candidate strategy at 1..pool.size() threads, on one buffer.
std::vector<ReadProbe> probe_reads(ThreadPool& pool, const ReadBuffer& buf, int reps) {
  std::vector<ReadProbe> out;
  for (int t = 1; t <= pool.size(); ++t) {
    std::unique_ptr<ThreadPool> fewer;
    if (t < pool.size()) fewer = std::make_unique<ThreadPool>(t);
    ThreadPool& p = fewer ? *fewer : pool;
    for (const StreamStrategy& s : candidate_stream_strategies()) {
      out.push_back({s, t, read_best(p, buf, s, reps)});
    }
  }
  return out;
}

ReadProbe best_of(const std::vector<ReadProbe>& probes) {
  ReadProbe best;
  for (const ReadProbe& p : probes) {
    if (p.gbps > best.gbps) best = p;
  }
  return best;
}

}  // namespace

BandwidthResult measure_memory_bandwidth(ThreadPool& pool, size_t bytes) {
  BandwidthResult r;
  r.bytes = static_cast<size_t>(read_floats(bytes)) * sizeof(float);
  // The check, like the probe, at every thread count (best of them), before
  // and after the strategies.
  const auto check_all = [&] {
    double best = 0;
    for (int t = 1; t <= pool.size(); ++t) best = std::max(best, measure_stream_read_gbps(t, r.bytes));
    return best;
  };
  double check = check_all();
  {
    const ReadBuffer buf(pool, read_floats(bytes));
    r.reads = probe_reads(pool, buf, kRepetitions);
  }
  check = std::max(check, check_all());
  r.best = best_of(r.reads);
  r.read_gbps = r.best.gbps;
  r.stream_read_gbps = check;

  // Triad over three arrays of a third of the read buffer each.
  const int64_t m = read_floats(r.bytes) / 3 / kGrainFloats * kGrainFloats;
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
  const ReadBuffer buf(pool, read_floats(bytes));
  return best_of(probe_reads(pool, buf, 2)).gbps;
}

double measure_read_gbps(ThreadPool& pool, StreamStrategy strategy, size_t bytes, int repetitions) {
  const ReadBuffer buf(pool, read_floats(bytes));
  return read_best(pool, buf, strategy, std::max(1, repetitions));
}

namespace {

// `chains(i, &work)` on one thread per pool slot (work = operations done),
// best of three rounds, operations per second / 1e9.
template <class Chains>
double peak_rate(ThreadPool& pool, const Chains& chains) {
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<double> work(static_cast<size_t>(pool.size()), 0.0);
    const auto t0 = std::chrono::steady_clock::now();
    // One chunk per thread.
    pool.parallel_for(pool.size(), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) chains(i, &work[static_cast<size_t>(i)]);
    });
    const double secs = seconds_since(t0);
    double total = 0;
    for (double w : work) total += w;
    best = std::max(best, total / secs / 1e9);
  }
  return best;
}

}  // namespace

double measure_peak_gflops(ThreadPool& pool) {
  const auto fma_fn = HWY_DYNAMIC_DISPATCH(FmaChains);
  std::atomic<float> sink{0};
  return peak_rate(pool, [&](int64_t i, double* flops) {
    sink.store(fma_fn(20'000'000, static_cast<float>(i), flops), std::memory_order_relaxed);
  });
}

ComputePeaks measure_compute_peaks(ThreadPool& pool) {
  ComputePeaks p;
  p.fma_gflops = measure_peak_gflops(pool);
  const auto dot_fn = HWY_DYNAMIC_DISPATCH(Int8DotChains);
  std::atomic<int32_t> sink{0};
  p.int8_gmacs = peak_rate(pool, [&](int64_t i, double* macs) {
    sink.store(dot_fn(10'000'000, static_cast<int32_t>(i), macs), std::memory_order_relaxed);
  });
  const std::string target = active_target_name();
  p.int8_method = p.int8_gmacs == 0 ? "none" : (target == "AVX3_DL" ? "AVX512-VNNI" : "maddubs");
  if (amx_support().int8()) p.amx_int8_gmacs = peak_rate(pool, amx_int8_peak_chains);
  if (amx_support().bf16()) p.amx_bf16_gflops = peak_rate(pool, amx_bf16_peak_chains);
  return p;
}

}  // namespace ladder::ops
#endif  // HWY_ONCE
