// The roofline as Google Benchmark cases: the best read bandwidth over every
// streaming strategy (and the STREAM-style check it should agree with),
// triad and FMA throughput of this machine (2 threads), then matmul at batch
// 1 as % of the best read and F32 GEMM (512 rows) as % of the FMA peak.
// The peaks are measured once, in the same process, before any case.
// Reproduce: build-*/bench/roofline_bench [--threads via LADDER_BENCH_THREADS]
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "ops/roofline.h"
#include "ops/thread_pool.h"
#include "perf/roofline_report.h"

namespace ladder::ops {
namespace {

int bench_threads() {
  const char* env = std::getenv("LADDER_BENCH_THREADS");
  return env ? std::atoi(env) : 2;
}

ThreadPool& pool() {
  static ThreadPool p(bench_threads());
  return p;
}

const BandwidthResult& peak_bandwidth() {
  static const BandwidthResult r = measure_memory_bandwidth(pool());
  return r;
}

double peak_gflops() {
  static const double g = measure_peak_gflops(pool());
  return g;
}

void BM_PeakBandwidth(benchmark::State& state) {
  BandwidthResult r;
  for (auto _ : state) r = measure_memory_bandwidth(pool());
  state.counters["read_GB/s"] = r.read_gbps;  // best strategy and thread count
  state.counters["stream_check_GB/s"] = r.stream_read_gbps;
  state.counters["best_over_check"] = r.stream_read_gbps > 0 ? r.read_gbps / r.stream_read_gbps : 0;
  state.counters["triad_GB/s"] = r.triad_gbps;
}
BENCHMARK(BM_PeakBandwidth)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_PeakFma(benchmark::State& state) {
  double g = 0;
  for (auto _ : state) g = measure_peak_gflops(pool());
  state.counters["GFLOP/s"] = g;
}
BENCHMARK(BM_PeakFma)->Iterations(1)->Unit(benchmark::kMillisecond);

// Batch 1: weights cycled over 256 MiB of copies, so they come from memory.
// One iteration each: time_matmul times its own rounds (0.5 s) and returns
// the best per-call time, so the framework must not repeat it until the
// per-call times add up to its minimum (that would be thousands of rounds).
void BM_Gemv(benchmark::State& state, TensorType type, int64_t n_in, int64_t n_out) {
  const double peak = peak_bandwidth().read_gbps;
  double secs = 0;
  for (auto _ : state) {
    secs = perf::time_matmul(pool(), type, n_in, n_out, 1, 0.5, size_t{256} << 20);
    state.SetIterationTime(secs);
  }
  const double gbps =
      static_cast<double>(row_bytes(traits_of(type), static_cast<size_t>(n_in)) * n_out) / secs / 1e9;
  state.counters["GB/s"] = gbps;
  state.counters["pct_of_bw"] = 100.0 * gbps / peak;
}

#define LADDER_GEMV(T)                                                                                   \
  BENCHMARK_CAPTURE(BM_Gemv, T##_768x2048, TensorType::k##T, 768, 2048)->UseManualTime()->Iterations(1); \
  BENCHMARK_CAPTURE(BM_Gemv, T##_2048x768, TensorType::k##T, 2048, 768)->UseManualTime()->Iterations(1); \
  BENCHMARK_CAPTURE(BM_Gemv, T##_768x32000, TensorType::k##T, 768, 32000)->UseManualTime()->Iterations(1)

LADDER_GEMV(F32);
LADDER_GEMV(F16);
LADDER_GEMV(BF16);
LADDER_GEMV(Q8_0);
LADDER_GEMV(Q4_0);

// 512 rows against F32 weights (in cache: a GEMM reuses every weight 512 times).
void BM_Gemm(benchmark::State& state, int64_t n_in, int64_t n_out) {
  const double peak = peak_gflops();
  constexpr int64_t kRows = 512;
  double secs = 0;
  for (auto _ : state) {
    secs = perf::time_matmul(pool(), TensorType::kF32, n_in, n_out, kRows, 0.5, 0);
    state.SetIterationTime(secs);
  }
  const double gflops = 2.0 * static_cast<double>(kRows * n_in * n_out) / secs / 1e9;
  state.counters["GFLOP/s"] = gflops;
  state.counters["pct_of_peak"] = 100.0 * gflops / peak;
}
BENCHMARK_CAPTURE(BM_Gemm, F32_512x768x768, 768, 768)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Gemm, F32_512x768x2048, 768, 2048)
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ladder::ops

BENCHMARK_MAIN();
