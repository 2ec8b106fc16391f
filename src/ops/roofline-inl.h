// Per-target roofline probes, compiled once per Highway target through
// roofline.cc: a streaming read, a STREAM triad and independent FMA chains.

#if defined(LADDER_OPS_ROOFLINE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_ROOFLINE_INL_H_
#undef LADDER_OPS_ROOFLINE_INL_H_
#else
#define LADDER_OPS_ROOFLINE_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ladder::ops::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of n floats (n a multiple of 4 vectors), four accumulators, with the
// software prefetch the weight-streaming kernels use (a few KiB ahead), so
// the probe is the best streaming read this machine gives, not a pessimistic one.
float ReadSum(const float* p, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  constexpr int64_t kAheadFloats = 1024;  // 4 KiB
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  for (int64_t i = 0; i + 4 * N <= n; i += 4 * N) {
    // One prefetch per 64-byte line, whatever the vector width.
    for (int64_t l = 0; l < 4 * N; l += 16) __builtin_prefetch(p + i + l + kAheadFloats, 0, 0);
    a0 = hn::Add(a0, hn::Load(d, p + i));
    a1 = hn::Add(a1, hn::Load(d, p + i + N));
    a2 = hn::Add(a2, hn::Load(d, p + i + 2 * N));
    a3 = hn::Add(a3, hn::Load(d, p + i + 3 * N));
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
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

}  // namespace ladder::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LADDER_OPS_ROOFLINE_INL_H_
