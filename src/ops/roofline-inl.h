// Per-target roofline probes, compiled once per Highway target through
// roofline.cc: streaming reads under each software-prefetch strategy, a
// STREAM triad, independent FMA chains and independent int8 dot-product
// chains. Each probe measures the machine, not the kernels' habits: the read
// probe is timed under every strategy and the best one is the roofline.

#if defined(LADDER_OPS_ROOFLINE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_ROOFLINE_INL_H_
#undef LADDER_OPS_ROOFLINE_INL_H_
#else
#define LADDER_OPS_ROOFLINE_INL_H_
#endif

#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "ops/target_features.h"
#include "ops/stream_strategy.h"

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL
LADDER_TARGET_FEATURES_PUSH("avx512vnni")
#endif
namespace ladder::ops::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of n floats (n a multiple of 16 and of 4 vectors), four accumulators;
// every 64 bytes read, one prefetch of the line `ahead` bytes further with
// locality kLocality (3 = T0 ... 0 = NTA), or none when kLocality < 0.
template <int kLocality>
HWY_INLINE float read_sum(const float* p, int64_t n, int64_t ahead) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t ahead_floats = ahead / static_cast<int64_t>(sizeof(float));
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  for (int64_t i = 0; i + 4 * N <= n; i += 4 * N) {
    if constexpr (kLocality >= 0) {
      // One prefetch per 64-byte line, whatever the vector width.
      for (int64_t l = 0; l < 4 * N; l += 16) __builtin_prefetch(p + i + l + ahead_floats, 0, kLocality);
    }
    a0 = hn::Add(a0, hn::Load(d, p + i));
    a1 = hn::Add(a1, hn::Load(d, p + i + N));
    a2 = hn::Add(a2, hn::Load(d, p + i + 2 * N));
    a3 = hn::Add(a3, hn::Load(d, p + i + 3 * N));
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
}

float ReadSum(const float* p, int64_t n, StreamStrategy s) {
  switch (s.prefetch) {
    case Prefetch::kT0: return read_sum<3>(p, n, s.distance);
    case Prefetch::kT1: return read_sum<2>(p, n, s.distance);
    case Prefetch::kT2: return read_sum<1>(p, n, s.distance);
    case Prefetch::kNta: return read_sum<0>(p, n, s.distance);
    case Prefetch::kNone: break;
  }
  return read_sum<-1>(p, n, 0);
}

void Triad(float* a, const float* b, const float* c, float s, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vs = hn::Set(d, s);
  for (int64_t i = 0; i + N <= n; i += N)
    hn::Store(hn::MulAdd(vs, hn::Load(d, c + i), hn::Load(d, b + i)), d, a + i);
}

// 12 independent chains of `iters` FMAs each (enough to cover FMA latency x
// pipes on current x86 cores). Returns a value that depends on all of them so
// the work cannot be optimized away; *flops gets the FLOP count.
float FmaChains(int64_t iters, float seed, double* flops) {
  const hn::ScalableTag<float> d;
  const auto m = hn::Set(d, 0.999999f);
  const auto a = hn::Set(d, 1e-7f);
  auto v0 = hn::Set(d, seed), v1 = hn::Set(d, seed + 1), v2 = hn::Set(d, seed + 2), v3 = hn::Set(d, seed + 3);
  auto v4 = hn::Set(d, seed + 4), v5 = hn::Set(d, seed + 5), v6 = hn::Set(d, seed + 6),
       v7 = hn::Set(d, seed + 7);
  auto v8 = hn::Set(d, seed + 8), v9 = hn::Set(d, seed + 9), v10 = hn::Set(d, seed + 10),
       v11 = hn::Set(d, seed + 11);
  for (int64_t i = 0; i < iters; ++i) {
    v0 = hn::MulAdd(v0, m, a);
    v1 = hn::MulAdd(v1, m, a);
    v2 = hn::MulAdd(v2, m, a);
    v3 = hn::MulAdd(v3, m, a);
    v4 = hn::MulAdd(v4, m, a);
    v5 = hn::MulAdd(v5, m, a);
    v6 = hn::MulAdd(v6, m, a);
    v7 = hn::MulAdd(v7, m, a);
    v8 = hn::MulAdd(v8, m, a);
    v9 = hn::MulAdd(v9, m, a);
    v10 = hn::MulAdd(v10, m, a);
    v11 = hn::MulAdd(v11, m, a);
  }
  *flops = 2.0 * 12.0 * static_cast<double>(hn::Lanes(d)) * static_cast<double>(iters);
  const auto s =
      hn::Add(hn::Add(hn::Add(v0, v1), hn::Add(v2, v3)), hn::Add(hn::Add(v4, v5), hn::Add(v6, v7)));
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(s, hn::Add(hn::Add(v8, v9), hn::Add(v10, v11)))));
}

#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3
using DotVec = __m512i;
HWY_INLINE DotVec dot_set1_epi8(char v) { return _mm512_set1_epi8(v); }
HWY_INLINE DotVec dot_set1_epi32(int32_t v) { return _mm512_set1_epi32(v); }
HWY_INLINE DotVec dot_add(DotVec a, DotVec b) { return _mm512_add_epi32(a, b); }
// One int8 dot-product step: acc + the 4-byte dot products of u and s.
HWY_INLINE DotVec dot_step(DotVec acc, DotVec u, DotVec s) {
#if HWY_TARGET == HWY_AVX3_DL
  return _mm512_dpbusd_epi32(acc, u, s);
#else
  return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
#endif
}
#elif HWY_TARGET == HWY_AVX2
using DotVec = __m256i;
HWY_INLINE DotVec dot_set1_epi8(char v) { return _mm256_set1_epi8(v); }
HWY_INLINE DotVec dot_set1_epi32(int32_t v) { return _mm256_set1_epi32(v); }
HWY_INLINE DotVec dot_add(DotVec a, DotVec b) { return _mm256_add_epi32(a, b); }
HWY_INLINE DotVec dot_step(DotVec acc, DotVec u, DotVec s) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}
#endif

// 12 independent chains of `iters` int8 dot-product steps, with the widest
// instruction the target has: AVX512-VNNI vpdpbusd (64 multiply-adds per
// instruction), else vpmaddubsw + vpmaddwd (32 or 64 per pair, as the
// kernels do without VNNI). *macs gets the multiply-add count; 0 where the
// target has no integer dot product (the kernels then dequantize to float).
int32_t Int8DotChains(int64_t iters, int32_t seed, double* macs) {
#if HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  const DotVec s = dot_set1_epi8(-2);
  DotVec u = dot_set1_epi8(3);
  DotVec v[12];
  for (int c = 0; c < 12; ++c) v[c] = dot_set1_epi32(seed + c);
  for (int64_t i = 0; i < iters; ++i) {
    // Opaque to the optimizer, so no product is hoisted out of the loop.
    asm volatile("" : "+v"(u));
    for (int c = 0; c < 12; ++c) v[c] = dot_step(v[c], u, s);
  }
  DotVec t = v[0];
  for (int c = 1; c < 12; ++c) t = dot_add(t, v[c]);
  *macs = 12.0 * static_cast<double>(sizeof(DotVec)) * static_cast<double>(iters);
  alignas(64) int32_t lanes[sizeof(DotVec) / 4];
  std::memcpy(lanes, &t, sizeof(t));
  uint32_t sum = 0;  // wraps: the value only keeps the work from being optimised away
  for (int32_t x : lanes) sum += static_cast<uint32_t>(x);
  return static_cast<int32_t>(sum);
#else
  (void)iters;
  *macs = 0;
  return seed;
#endif
}

}  // namespace ladder::ops::HWY_NAMESPACE
#if HWY_TARGET == HWY_AVX3_DL
LADDER_TARGET_FEATURES_POP()
#endif
HWY_AFTER_NAMESPACE();

#endif  // LADDER_OPS_ROOFLINE_INL_H_
