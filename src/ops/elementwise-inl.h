// Per-target row-wise kernels (RMSNorm, SiLU*mul, softmax, RoPE), compiled
// once per Highway target through elementwise.cc.

#if defined(LADDER_OPS_ELEMENTWISE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_ELEMENTWISE_INL_H_
#undef LADDER_OPS_ELEMENTWISE_INL_H_
#else
#define LADDER_OPS_ELEMENTWISE_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace ladder::ops::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of x[i]*y[i] in one vector accumulator plus a scalar tail; a fixed
// order that depends on n only.
HWY_INLINE float dot_f32(const float* x, const float* y, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto acc = hn::Zero(d);
  int64_t i = 0;
  for (; i + N <= n; i += N) acc = hn::MulAdd(hn::LoadU(d, x + i), hn::LoadU(d, y + i), acc);
  float s = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; i < n; ++i) s += x[i] * y[i];
  return s;
}

void RmsNorm(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* y) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float ss = dot_f32(xr, xr, n);
    const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
    const auto vs = hn::Set(d, scale);
    int64_t i = 0;
    for (; i + N <= n; i += N) {
      hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, xr + i), vs), hn::LoadU(d, weight + i)), d, yr + i);
    }
    for (; i < n; ++i) yr[i] = xr[i] * scale * weight[i];
  }
}

void SiluMul(const float* gate, const float* up, int64_t n, float* out) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto one = hn::Set(d, 1.0f);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto g = hn::LoadU(d, gate + i);
    const auto e = hn::CallExp(d, hn::Neg(g));
    hn::StoreU(hn::Mul(hn::Div(g, hn::Add(one, e)), hn::LoadU(d, up + i)), d, out + i);
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void GeluMul(const float* gate, const float* up, int64_t n, float* out) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  constexpr float kC = 0.7978845608028654f;  // sqrt(2 / pi)
  const auto half = hn::Set(d, 0.5f), one = hn::Set(d, 1.0f), c = hn::Set(d, kC), a = hn::Set(d, 0.044715f);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto g = hn::LoadU(d, gate + i);
    const auto inner = hn::Mul(c, hn::MulAdd(hn::Mul(a, g), hn::Mul(g, g), g));
    const auto gelu = hn::Mul(hn::Mul(half, g), hn::Add(one, hn::CallTanh(d, inner)));
    hn::StoreU(hn::Mul(gelu, hn::LoadU(d, up + i)), d, out + i);
  }
  for (; i < n; ++i) {
    const float g = gate[i];
    out[i] = 0.5f * g * (1.0f + std::tanh(kC * (0.044715f * g * g * g + g))) * up[i];
  }
}

void SoftCap(float* x, int64_t n, float cap) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vc = hn::Set(d, cap), inv = hn::Set(d, 1.0f / cap);
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Mul(vc, hn::CallTanh(d, hn::Mul(hn::LoadU(d, x + i), inv))), d, x + i);
  for (; i < n; ++i) x[i] = cap * std::tanh(x[i] * (1.0f / cap));
}

void Softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  float mx = x[0];
  int64_t i = 0;
  if (n >= N) {
    auto vmax = hn::LoadU(d, x);
    for (i = N; i + N <= n; i += N) vmax = hn::Max(vmax, hn::LoadU(d, x + i));
    mx = hn::GetLane(hn::MaxOfLanes(d, vmax));
  }
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  const auto vm = hn::Set(d, mx);
  auto vsum = hn::Zero(d);
  for (i = 0; i + N <= n; i += N) {
    const auto e = hn::CallExp(d, hn::Sub(hn::LoadU(d, x + i), vm));
    hn::StoreU(e, d, x + i);
    vsum = hn::Add(vsum, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, vsum));
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  const auto vinv = hn::Set(d, inv);
  for (i = 0; i + N <= n; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vinv), d, x + i);
  for (; i < n; ++i) x[i] *= inv;
}

// cs: [rot_dims/2] cosines then [rot_dims/2] sines of the rotation angles.
// Products are not fused, so every lane matches the scalar formula exactly.
void RopeApply(float* x, int n_heads, int head_dim, int rot_dims, const float* cs, bool neox) {
  const hn::ScalableTag<float> d;
  const int N = static_cast<int>(hn::Lanes(d));
  const int half = rot_dims / 2;
  const float* cosv = cs;
  const float* sinv = cs + half;
  if (neox) {
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + h * head_dim;
      int i = 0;
      for (; i + N <= half; i += N) {
        const auto a = hn::LoadU(d, v + i), b = hn::LoadU(d, v + i + half);
        const auto c = hn::LoadU(d, cosv + i), s = hn::LoadU(d, sinv + i);
        hn::StoreU(hn::Sub(hn::Mul(a, c), hn::Mul(b, s)), d, v + i);
        hn::StoreU(hn::Add(hn::Mul(a, s), hn::Mul(b, c)), d, v + i + half);
      }
      for (; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * cosv[i] - b * sinv[i];
        v[i + half] = a * sinv[i] + b * cosv[i];
      }
    }
    return;
  }
  // Adjacent pairs: y = x * [c0 c0 c1 c1 ..] + swap_pairs(x) * [-s0 s0 -s1 s1 ..].
  thread_local std::vector<float> tables;
  tables.resize(2 * static_cast<size_t>(rot_dims));
  float* cdup = tables.data();
  float* salt = cdup + rot_dims;
  for (int j = 0; j < half; ++j) {
    cdup[2 * j] = cdup[2 * j + 1] = cosv[j];
    salt[2 * j] = -sinv[j];
    salt[2 * j + 1] = sinv[j];
  }
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    int i = 0;                // element index, even
#if HWY_TARGET != HWY_SCALAR  // one-lane vectors cannot swap pairs
    for (; i + N <= rot_dims; i += N) {
      const auto a = hn::LoadU(d, v + i);
      hn::StoreU(
          hn::Add(hn::Mul(a, hn::LoadU(d, cdup + i)), hn::Mul(hn::Shuffle2301(a), hn::LoadU(d, salt + i))), d,
          v + i);
    }
#endif
    for (; i < rot_dims; i += 2) {
      const float a = v[i], b = v[i + 1];
      const float c = cosv[i / 2], s = sinv[i / 2];
      v[i] = a * c + b * -s;
      v[i + 1] = b * c + a * s;
    }
  }
}

}  // namespace ladder::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LADDER_OPS_ELEMENTWISE_INL_H_
