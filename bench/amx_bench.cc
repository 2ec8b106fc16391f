// What a bit-identical AMX-INT8 matmul costs on this CPU, piece by piece
// (the shape of ops/matmul_amx-inl.h: one 32-element block per tile product,
// its sums stored and put through the float epilogue per block). Each case
// reports nanoseconds per 16 x 16 x 32 block product:
//   products         tile products alone (K = 32 or 64), operands in tiles
//   products_stored  each product zeroed, multiplied and its tile stored
//   tiles            the kernel's tile work: A from a 512-row activation
//                    buffer (L2), B from L1, zero, multiply, store
//   epilogue         the kernel's vector work alone: 16 rows of
//                    fma(float(sum), dw * dx, acc) per product
//   both             tiles and epilogue as the kernel runs them (the next
//                    run's products issued before this run's epilogue)
// If `both` is near `tiles + epilogue`, the two do not overlap, and the
// tiles' speedup over the vector kernel is bounded by that sum.
// Reproduce: build/bench/amx_bench (docs/BENCHMARKS.md, Intel Xeon with AMX).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <algorithm>

#include "hwy/aligned_allocator.h"
#include "ops/amx.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "ops/amx_tiles.h"

// The kernels below are compiled for AVX-512 and AMX; the benchmarks that
// call them (and their registration, run at start-up on any CPU) are not.
#if defined(__clang__)
#define LADDER_BENCH_AMX __attribute__((target("avx512f,avx512bw,amx-tile,amx-int8")))
#else
#define LADDER_BENCH_AMX
#endif

namespace ladder::ops {
namespace {

constexpr int64_t kBlocks = 24;   // n_in 768
constexpr int64_t kRowTiles = 32;  // 512 rows
constexpr int64_t kProducts = kBlocks * kRowTiles;

struct Operands {
  hwy::AlignedFreeUniquePtr<int8_t[]> a = hwy::AllocateAligned<int8_t>(kRowTiles * kBlocks * 512);
  hwy::AlignedFreeUniquePtr<int8_t[]> b = hwy::AllocateAligned<int8_t>(kBlocks * 512);  // [block] 8 x 64
  hwy::AlignedFreeUniquePtr<float[]> xd = hwy::AllocateAligned<float>(kRowTiles * kBlocks * 16);
  hwy::AlignedFreeUniquePtr<float[]> dw = hwy::AllocateAligned<float>(kBlocks * 16);
  Operands() {
    for (int64_t i = 0; i < kRowTiles * kBlocks * 512; ++i) a[i] = static_cast<int8_t>(i % 7 - 3);
    for (int64_t i = 0; i < kBlocks * 512; ++i) b[i] = static_cast<int8_t>(i % 5 - 2);
    for (int64_t i = 0; i < kRowTiles * kBlocks * 16; ++i) xd[i] = 0.01f * static_cast<float>(i % 13 + 1);
    for (int64_t i = 0; i < kBlocks * 16; ++i) dw[i] = 0.02f * static_cast<float>(i % 11 + 1);
  }
};

#if !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,amx-tile,amx-int8")
// GCC 12 reports the _mm512_undefined_*() inside its own AVX-512 intrinsics
// as uninitialized once they are inlined here (fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

LADDER_BENCH_AMX void configure(int k) {
  TileConfig cfg;
  for (int c = 0; c < 4; ++c) cfg.set(c, 16, 64);
  for (int t = 4; t < 6; ++t) cfg.set(t, 16, k);
  for (int t = 6; t < 8; ++t) cfg.set(t, k / 4, 64);
  _tile_loadconfig(&cfg);
}

// Four products of the row tile at `a` (blocks p..p+3) into tiles 0-3.
#define LADDER_BENCH_RUN(a, b, p)                                             \
  do {                                                                        \
    _tile_zero(0);                                                            \
    LADDER_TILE_LOAD(4, (a) + (p) * 512, 32);                                 \
    LADDER_TILE_LOAD(6, (b) + (p) * 512, 64);                                 \
    _tile_dpbssd(0, 4, 6);                                                    \
    _tile_zero(1);                                                            \
    LADDER_TILE_LOAD(5, (a) + ((p) + 1) * 512, 32);                           \
    LADDER_TILE_LOAD(7, (b) + ((p) + 1) * 512, 64);                           \
    _tile_dpbssd(1, 5, 7);                                                    \
    _tile_zero(2);                                                            \
    LADDER_TILE_LOAD(4, (a) + ((p) + 2) * 512, 32);                           \
    LADDER_TILE_LOAD(6, (b) + ((p) + 2) * 512, 64);                           \
    _tile_dpbssd(2, 4, 6);                                                    \
    _tile_zero(3);                                                            \
    LADDER_TILE_LOAD(5, (a) + ((p) + 3) * 512, 32);                           \
    LADDER_TILE_LOAD(7, (b) + ((p) + 3) * 512, 64);                           \
    _tile_dpbssd(3, 5, 7);                                                    \
  } while (0)

#define LADDER_BENCH_STORE(to)          \
  do {                                  \
    LADDER_TILE_STORE(0, (to)[0], 64);  \
    LADDER_TILE_STORE(1, (to)[1], 64);  \
    LADDER_TILE_STORE(2, (to)[2], 64);  \
    LADDER_TILE_STORE(3, (to)[3], 64);  \
  } while (0)

// Blocks p..p+3 of one row tile: 16 rows of the float epilogue each.
#define LADDER_BENCH_EPILOGUE(from, xd, dw, p)                                                         \
  do {                                                                                                 \
    for (int k = 0; k < 4; ++k) {                                                                      \
      const __m512 w = _mm512_load_ps((dw) + ((p) + k) * 16);                                          \
      const float* x = (xd) + ((p) + k) * 16;                                                          \
      _Pragma("GCC unroll 16") for (int i = 0; i < 16; ++i) {                                          \
        const __m512 s = _mm512_cvtepi32_ps(_mm512_load_si512((from)[k] + 16 * i));                    \
        acc[i] = _mm512_fmadd_ps(s, _mm512_mul_ps(w, _mm512_set1_ps(x[i])), acc[i]);                   \
      }                                                                                                \
    }                                                                                                  \
  } while (0)

// Seconds for one pass over every row tile (A: [row tile][block][16
// rows][32 bytes], 384 KiB), by `mode`:
// 0 tiles, 1 epilogue, 2 both.
LADDER_BENCH_AMX double pass(const Operands& o, int mode, float* out) {
  alignas(64) int32_t sums[2][4][256] = {};
  configure(32);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t rt = 0; rt < kRowTiles; ++rt) {
    const int8_t* a = o.a.get() + rt * kBlocks * 512;
    const int8_t* b = o.b.get();
    const float* xd = o.xd.get() + rt * kBlocks * 16;
    const float* dw = o.dw.get();
    __m512 acc[16];
    for (auto& v : acc) v = _mm512_setzero_ps();
    if (mode == 0) {
      for (int64_t p = 0; p < kBlocks; p += 4) {
        LADDER_BENCH_RUN(a, b, p);
        LADDER_BENCH_STORE(sums[(p / 4) % 2]);
      }
    } else if (mode == 1) {
      for (int64_t p = 0; p < kBlocks; p += 4) LADDER_BENCH_EPILOGUE(sums[(p / 4) % 2], xd, dw, p);
    } else {
      LADDER_BENCH_RUN(a, b, 0);
      LADDER_BENCH_STORE(sums[0]);
      for (int64_t p = 0; p < kBlocks; p += 4) {
        if (p + 4 < kBlocks) {
          LADDER_BENCH_RUN(a, b, p + 4);
          LADDER_BENCH_STORE(sums[(p / 4 + 1) % 2]);
        }
        LADDER_BENCH_EPILOGUE(sums[(p / 4) % 2], xd, dw, p);
      }
    }
    for (int i = 0; i < 16; ++i) out[i] += _mm512_reduce_add_ps(acc[i]);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  _tile_release();
  return secs;
}

// Products alone (stored or not), operands already in tiles.
LADDER_BENCH_AMX double products(int k, bool stored, int64_t n) {
  alignas(64) int8_t ops[4][1024] = {};
  alignas(64) int32_t sums[4][256];
  configure(k);
  LADDER_TILE_LOAD(4, ops[0], 64);
  LADDER_TILE_LOAD(5, ops[1], 64);
  LADDER_TILE_LOAD(6, ops[2], 64);
  LADDER_TILE_LOAD(7, ops[3], 64);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    if (stored) {
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
    }
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 5, 7);
    _tile_dpbssd(2, 4, 7);
    _tile_dpbssd(3, 5, 6);
    if (stored) LADDER_BENCH_STORE(sums);
  }
  LADDER_BENCH_STORE(sums);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  _tile_release();
  benchmark::DoNotOptimize(sums[0][0]);
  return secs;
}

#if !defined(__clang__)
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

bool skip_without_amx(benchmark::State& state) {
  if (amx_support().int8()) return false;
  state.SkipWithError(("AMX-INT8 is not usable here: " + amx_support().why_not).c_str());
  return true;
}

void BM_Products(benchmark::State& state) {
  if (skip_without_amx(state)) return;
  const int k = static_cast<int>(state.range(0));
  const bool stored = state.range(1) != 0;
  constexpr int64_t kN = 200'000;
  double secs = 0;
  for (auto _ : state) {
    secs = products(k, stored, kN);
    state.SetIterationTime(secs);
  }
  state.counters["ns_per_product"] = secs / static_cast<double>(4 * kN) * 1e9;
  state.counters["GMAC/s"] = static_cast<double>(4 * kN) * 16 * 16 * k / secs / 1e9;
}
BENCHMARK(BM_Products)
    ->ArgNames({"K", "stored"})
    ->Args({32, 0})
    ->Args({64, 0})
    ->Args({32, 1})
    ->Args({64, 1})
    ->UseManualTime()
    ->Iterations(5);

void BM_KernelPieces(benchmark::State& state) {
  if (skip_without_amx(state)) return;
  const int mode = static_cast<int>(state.range(0));
  static const Operands o;
  float out[16] = {};
  double best = 1e30;
  for (auto _ : state) {
    double secs = 0;
    for (int rep = 0; rep < 50; ++rep) secs += pass(o, mode, out);
    best = std::min(best, secs);
    state.SetIterationTime(secs);
  }
  benchmark::DoNotOptimize(out[0]);
  state.counters["ns_per_product"] = best / static_cast<double>(50 * kProducts) * 1e9;
}
BENCHMARK(BM_KernelPieces)
    ->ArgName("tiles0_epilogue1_both2")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Iterations(5);

}  // namespace
}  // namespace ladder::ops

#else  // !x86-64

namespace {
void BM_Products(benchmark::State& state) {
  state.SkipWithError("AMX exists only on x86-64");
}
BENCHMARK(BM_Products);
}  // namespace

#endif
BENCHMARK_MAIN();
