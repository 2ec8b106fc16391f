// Kernel micro-benchmarks: matmul per weight type at batch 1 and 16 (weights
// hot in cache: this is the compute side of the roofline; `ladder bench
// roofline` measures the memory side), row-wise kernels, paged attention and
// the thread pool's dispatch cost. Reproduce: build-*/bench/ops_bench.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/tensor_type.h"
#include "ops/amx.h"
#include "ops/attention.h"
#include "ops/bf16_dot.h"
#include "ops/elementwise.h"
#include "ops/thread_pool.h"
#include "perf/roofline_report.h"

namespace ladder::ops {
namespace {

std::vector<float> random_floats(size_t n) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// matmul of an n_in x n_out weight (hot in cache) at `rows` rows, 1 thread:
// counters give weight bytes per second and multiply-adds per second.
void BM_Matmul(benchmark::State& state, TensorType type, int64_t n_in, int64_t n_out) {
  const int64_t rows = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  ThreadPool pool(threads);
  double secs = 0;
  for (auto _ : state) {
    secs = perf::time_matmul(pool, type, n_in, n_out, rows, 0.2, 0);
    state.SetIterationTime(secs);
  }
  const double bytes = static_cast<double>(row_bytes(traits_of(type), static_cast<size_t>(n_in)) * n_out);
  state.counters["weight_GB/s"] = bytes / secs / 1e9;
  state.counters["GMAC/s"] = static_cast<double>(rows * n_in * n_out) / secs / 1e9;
}

void matmul_args(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2})
    for (int rows : {1, 4, 16}) b->Args({rows, threads});
  b->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);
}

#define LADDER_MATMUL_BENCH(T)                                                               \
  BENCHMARK_CAPTURE(BM_Matmul, T##_768x768, TensorType::k##T, 768, 768)->Apply(matmul_args); \
  BENCHMARK_CAPTURE(BM_Matmul, T##_2048x256, TensorType::k##T, 2048, 256)->Apply(matmul_args)

LADDER_MATMUL_BENCH(F32);
LADDER_MATMUL_BENCH(F16);
LADDER_MATMUL_BENCH(BF16);
LADDER_MATMUL_BENCH(Q8_0);
LADDER_MATMUL_BENCH(Q4_0);
LADDER_MATMUL_BENCH(Q4_K);
LADDER_MATMUL_BENCH(Q6_K);
LADDER_MATMUL_BENCH(Q5_K);

// A 512-row prefill matmul on packed weights, the int8 kernels on vectors
// (first arg 0) and on AMX tiles where usable (1), 1 thread, with the
// weights hot in cache (second arg 0) or cycled through copies totalling
// that many MiB (from memory, as a model's layers are). Compare a pair
// taken moments apart, or run with --benchmark_repetitions=9
// --benchmark_enable_random_interleaving=true on a shared machine.
void BM_PrefillPacked(benchmark::State& state, TensorType type, int64_t n_in, int64_t n_out) {
  const bool amx = state.range(0) != 0;
  if (amx && !amx_int8_active()) {
    state.SkipWithError("AMX-INT8 is not usable on this machine (ladder info says why)");
    return;
  }
  ThreadPool pool(1);
  set_amx_enabled(amx);
  double secs = 0;
  for (auto _ : state) {
    secs = perf::time_matmul(pool, type, n_in, n_out, 512, 0.3, state.range(1) << 20, /*packed=*/true);
    state.SetIterationTime(secs);
  }
  set_amx_enabled(true);
  state.counters["GMAC/s"] = static_cast<double>(512 * n_in * n_out) / secs / 1e9;
}

void prefill_args(benchmark::internal::Benchmark* b) {
  for (int64_t cycle_mib : {0, 256}) b->Args({0, cycle_mib})->Args({1, cycle_mib});
  b->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
}

// A 110m-class model's products: the FFN's up projection and its down one.
#define LADDER_PREFILL_BENCH(T)                                                                             \
  BENCHMARK_CAPTURE(BM_PrefillPacked, T##_768x2048, TensorType::k##T, 768, 2048)->Apply(prefill_args); \
  BENCHMARK_CAPTURE(BM_PrefillPacked, T##_2048x768, TensorType::k##T, 2048, 768)->Apply(prefill_args)

LADDER_PREFILL_BENCH(Q8_0);
LADDER_PREFILL_BENCH(Q4_0);
LADDER_PREFILL_BENCH(Q4_K);
LADDER_PREFILL_BENCH(Q6_K);

// A 512-row prefill matmul on packed BF16 weights, on the AVX512-BF16 dot
// kernel (first arg 1, where the CPU has it) or the FMA kernel (0), 1
// thread, weights hot in cache: the FFN products of a 110m-class model
// (768 x 2048 and back) and of a 1B-class one (2048 x 8192 and back).
void BM_PrefillBf16(benchmark::State& state) {
  const bool dot = state.range(0) != 0;
  const int64_t n_in = state.range(1), n_out = state.range(2);
  set_bf16_dot_wanted(dot);
  if (dot && !bf16_dot_active()) {
    set_bf16_dot_wanted(std::nullopt);
    state.SkipWithError("no AVX512-BF16 dot kernel on this machine (ladder info says why)");
    return;
  }
  ThreadPool pool(1);
  double secs = 0;
  for (auto _ : state) {
    secs = perf::time_matmul(pool, TensorType::kBF16, n_in, n_out, 512, 0.3, 0, /*packed=*/true);
    state.SetIterationTime(secs);
  }
  set_bf16_dot_wanted(std::nullopt);
  state.counters["GFLOP/s"] = 2.0 * static_cast<double>(512 * n_in * n_out) / secs / 1e9;
}
BENCHMARK(BM_PrefillBf16)
    ->ArgsProduct({{0, 1}, {768}, {2048}})
    ->ArgsProduct({{0, 1}, {2048}, {768}})
    ->ArgsProduct({{0, 1}, {2048}, {8192}})
    ->ArgsProduct({{0, 1}, {8192}, {2048}})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_RmsNorm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto x = random_floats(n), w = random_floats(n);
  std::vector<float> y(n);
  for (auto _ : state) {
    rms_norm(x.data(), w.data(), 1, n, 1e-5f, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * n * 4);
}
BENCHMARK(BM_RmsNorm)->Arg(768)->Arg(4096);

void BM_SiluMul(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto g = random_floats(n), u = random_floats(n);
  std::vector<float> y(n);
  for (auto _ : state) {
    silu_mul(g.data(), u.data(), n, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_SiluMul)->Arg(2048);

void BM_Softmax(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto x0 = random_floats(n);
  auto x = x0;
  for (auto _ : state) {
    x = x0;
    softmax(x.data(), n);
    benchmark::DoNotOptimize(x.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Softmax)->Arg(32000);

void BM_Rope(benchmark::State& state) {
  const bool neox = state.range(0) != 0;
  std::vector<float> inv(32);
  for (int i = 0; i < 32; ++i) inv[i] = std::pow(10000.0f, -i / 32.0f);
  auto x = random_floats(12 * 64);
  for (auto _ : state) {
    rope(x.data(), 12, 64, 64, 123, inv.data(), neox ? RopeStyle::kNeox : RopeStyle::kNormal);
    benchmark::DoNotOptimize(x.data());
  }
}
BENCHMARK(BM_Rope)->Arg(0)->Arg(1);

// Attention of n_q queries at the end of a context of ctx tokens, 12 heads of
// 64 (F32 or F16 KV) sharing 12 / group KV heads, 2 threads: decode (n_q = 1)
// and prefill chunks, without and with GQA.
void BM_Attention(benchmark::State& state) {
  const int64_t ctx = state.range(0), n_q = state.range(1);
  const TensorType dtype = state.range(2) ? TensorType::kF16 : TensorType::kF32;
  const int heads = 12, hd = 64, bs = 16, kv_heads = heads / static_cast<int>(state.range(3));
  const int n_blocks = static_cast<int>((ctx + bs - 1) / bs);
  const size_t elem = dtype == TensorType::kF16 ? 2 : 4;
  PagedKvLayer l;
  l.block_size = bs;
  l.n_kv_heads = kv_heads;
  l.head_dim = hd;
  l.dtype = dtype;
  l.block_stride_bytes = static_cast<size_t>(bs) * kv_heads * hd * elem;
  std::vector<uint8_t> kb(l.block_stride_bytes * n_blocks), vb(kb.size());
  PagedKvLayer k = l, v = l;
  k.layout = KvLayout::kDimMajor;
  k.base = kb.data();
  v.base = vb.data();
  std::vector<int32_t> table(n_blocks);
  for (int i = 0; i < n_blocks; ++i) table[i] = i;
  const auto row = random_floats(kv_heads * hd);
  for (int64_t p = 0; p < ctx; ++p) {
    kv_store(k, table.data(), p, row.data());
    kv_store(v, table.data(), p, row.data());
  }
  const auto q = random_floats(n_q * heads * hd);
  std::vector<int32_t> pos(n_q);
  for (int64_t i = 0; i < n_q; ++i) pos[i] = static_cast<int32_t>(ctx - n_q + i);
  std::vector<float> out(q.size());
  ThreadPool pool(2);
  for (auto _ : state) {
    attention(q.data(), n_q, pos.data(), heads, k, v, table.data(), 0.125f, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Attention)
    ->Args({512, 1, 0, 1})
    ->Args({512, 1, 1, 1})
    ->Args({2048, 1, 1, 1})
    ->Args({2048, 1, 1, 4})
    ->Args({512, 512, 0, 1})
    ->Args({512, 512, 1, 1})
    ->Args({512, 512, 1, 4})
    ->Unit(benchmark::kMicrosecond);

void BM_PoolDispatch(benchmark::State& state) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  std::vector<int64_t> sink(64);
  for (auto _ : state) {
    pool.parallel_for(pool.size(), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sink[static_cast<size_t>(i) * 8] += i;
    });
  }
}
BENCHMARK(BM_PoolDispatch)->Arg(1)->Arg(2)->Arg(4);

}  // namespace
}  // namespace ladder::ops

BENCHMARK_MAIN();
