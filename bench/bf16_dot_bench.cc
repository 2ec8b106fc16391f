// Whether AVX-512 BF16's native dot product (vdpbf16ps) would make BF16
// decode faster than what the float kernels do (ops/matmul_float-inl.h:
// widen each bf16 weight to F32 with a zero-extend and a shift, then an F32
// FMA). A decode matmul streams a matrix far larger than the caches through
// a 4-column tile, so each case reads the same 2048 x 32768 BF16 matrix
// (128 MiB) in that tile's packed order and reports bytes per second:
//   read       the matrix XOR-folded into one register: the loads alone
//   widen_fma  the kernel's arithmetic: widen, FMA against F32 activations
//   dpbf16x2   the native dot: activations split once into two bf16 halves
//              (x = hi + lo, 16 significant bits), two vdpbf16ps per weight
//              vector (32 weights)
// Each at 1 and 2 threads (Google Benchmark splits the column groups). If
// widen_fma already reads at `read`'s speed, the native dot has nothing to
// win in decode. (The engine now runs BF16 weights on the native dot at
// every batch size, ops/matmul_bf16_dot-inl.h, for what it wins at
// batches and prefill; ops_bench's BM_PrefillBf16 times that.) Reproduce: build/bench/bf16_dot_bench (docs/BENCHMARKS.md,
// "Native BF16 dot").
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>

#include "avx512_bench.h"
#include "hwy/aligned_allocator.h"

#if defined(__x86_64__)
#include <cpuid.h>

namespace {

constexpr int64_t kIn = 2048;
constexpr int64_t kOut = 32768;
constexpr int64_t kCols = 4;     // the float tile's width
constexpr int64_t kChunk = 32;   // bf16 elements per 512-bit vector
constexpr int64_t kGroups = kOut / kCols;

bool has_avx512_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 16))) return false;  // AVX512F
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
  return (a & (1u << 5)) != 0;  // AVX512_BF16
}

struct Operands {
  // Group g, chunk k: the group's 4 columns' 32 weights one after another.
  hwy::AlignedFreeUniquePtr<uint16_t[]> w = hwy::AllocateAligned<uint16_t>(kIn * kOut);
  hwy::AlignedFreeUniquePtr<float[]> x = hwy::AllocateAligned<float>(kIn);
  hwy::AlignedFreeUniquePtr<uint16_t[]> x_hi = hwy::AllocateAligned<uint16_t>(kIn);
  hwy::AlignedFreeUniquePtr<uint16_t[]> x_lo = hwy::AllocateAligned<uint16_t>(kIn);
  hwy::AlignedFreeUniquePtr<float[]> y = hwy::AllocateAligned<float>(kOut);
  Operands() {
    for (int64_t i = 0; i < kIn * kOut; ++i) w[i] = static_cast<uint16_t>(0x3c00 + (i * 2654435761u >> 20) % 0x400);
    for (int64_t i = 0; i < kIn; ++i) {
      x[i] = 0.001f * static_cast<float>(i % 97) - 0.05f;
      x_hi[i] = to_bf16(x[i]);
      x_lo[i] = to_bf16(x[i] - from_bf16(x_hi[i]));
    }
  }
  static float from_bf16(uint16_t h) {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static uint16_t to_bf16(float f) {  // nearest, ties to even
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
  }
};

Operands& operands() {
  static Operands* o = new Operands();
  return *o;
}

LADDER_BENCH_AVX512 void read_groups(const Operands& o, int64_t g0, int64_t g1) {
  __m512i acc = _mm512_setzero_si512();
  for (const uint16_t* p = o.w.get() + g0 * kCols * kIn; p < o.w.get() + g1 * kCols * kIn; p += kChunk) {
    acc = _mm512_xor_si512(acc, _mm512_load_si512(p));
  }
  o.y[g0] = static_cast<float>(_mm512_reduce_add_epi32(acc));
}

LADDER_BENCH_AVX512 void widen_fma_groups(const Operands& o, int64_t g0, int64_t g1) {
  for (int64_t g = g0; g < g1; ++g) {
    const uint16_t* p = o.w.get() + g * kCols * kIn;
    __m512 acc[kCols];
    for (auto& a : acc) a = _mm512_setzero_ps();
    for (int64_t k = 0; k < kIn; k += kChunk, p += kCols * kChunk) {
      const __m512 x0 = _mm512_load_ps(o.x.get() + k), x1 = _mm512_load_ps(o.x.get() + k + 16);
      for (int64_t c = 0; c < kCols; ++c) {
        const uint16_t* wc = p + c * kChunk;
        const __m512i w0 = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(wc))), 16);
        const __m512i w1 =
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(wc + 16))), 16);
        acc[c] = _mm512_fmadd_ps(x0, _mm512_castsi512_ps(w0), acc[c]);
        acc[c] = _mm512_fmadd_ps(x1, _mm512_castsi512_ps(w1), acc[c]);
      }
    }
    for (int64_t c = 0; c < kCols; ++c) o.y[g * kCols + c] = _mm512_reduce_add_ps(acc[c]);
  }
}

LADDER_BENCH_BF16 void dpbf16_groups(const Operands& o, int64_t g0, int64_t g1) {
  for (int64_t g = g0; g < g1; ++g) {
    const uint16_t* p = o.w.get() + g * kCols * kIn;
    __m512 acc[kCols];
    for (auto& a : acc) a = _mm512_setzero_ps();
    for (int64_t k = 0; k < kIn; k += kChunk, p += kCols * kChunk) {
      const __m512bh hi = reinterpret_cast<__m512bh>(_mm512_load_si512(o.x_hi.get() + k));
      const __m512bh lo = reinterpret_cast<__m512bh>(_mm512_load_si512(o.x_lo.get() + k));
      for (int64_t c = 0; c < kCols; ++c) {
        const __m512bh w = reinterpret_cast<__m512bh>(_mm512_load_si512(p + c * kChunk));
        acc[c] = _mm512_dpbf16_ps(acc[c], hi, w);
        acc[c] = _mm512_dpbf16_ps(acc[c], lo, w);
      }
    }
    for (int64_t c = 0; c < kCols; ++c) o.y[g * kCols + c] = _mm512_reduce_add_ps(acc[c]);
  }
}

template <void (*kKernel)(const Operands&, int64_t, int64_t), bool kNeedsBf16>
void BM_Bf16Decode(benchmark::State& state) {
  if (kNeedsBf16 ? !has_avx512_bf16() : !__builtin_cpu_supports("avx512bw")) {
    state.SkipWithError(kNeedsBf16 ? "this CPU has no AVX512_BF16" : "this CPU has no AVX-512");
    return;
  }
  const Operands& o = operands();
  // Each thread streams its share of the column groups, as the kernels' pool does.
  const int64_t g0 = kGroups * state.thread_index() / state.threads();
  const int64_t g1 = kGroups * (state.thread_index() + 1) / state.threads();
  for (auto _ : state) {
    kKernel(o, g0, g1);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * (g1 - g0) * kCols * kIn * static_cast<int64_t>(sizeof(uint16_t)));
}

BENCHMARK_TEMPLATE(BM_Bf16Decode, read_groups, false)->Name("read")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_Bf16Decode, widen_fma_groups, false)->Name("widen_fma")->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_Bf16Decode, dpbf16_groups, true)->Name("dpbf16x2")->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
#endif  // __x86_64__

BENCHMARK_MAIN();
