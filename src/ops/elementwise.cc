// Row-wise kernels: dispatch to the per-target code in elementwise-inl.h, and
// the scalar references the tests hold them to.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/elementwise.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "ops/elementwise-inl.h"

#if HWY_ONCE
#include <cmath>
#include <vector>

#include "common/check.h"
#include "ops/elementwise.h"

namespace ladder::ops {

HWY_EXPORT(RmsNorm);
HWY_EXPORT(SiluMul);
HWY_EXPORT(GeluMul);
HWY_EXPORT(SoftCap);
HWY_EXPORT(Softmax);
HWY_EXPORT(RopeApply);

namespace {

// [rot_dims/2] cosines then [rot_dims/2] sines, in float as GGUF models
// expect (angle = pos * inv_freq[i], rounded to float first).
void rope_angles(int rot_dims, int64_t pos, const float* inv_freq, float mscale, std::vector<float>& cs) {
  const int half = rot_dims / 2;
  cs.resize(static_cast<size_t>(rot_dims));
  for (int i = 0; i < half; ++i) {
    const float theta = static_cast<float>(pos) * inv_freq[i];
    cs[i] = std::cos(theta) * mscale;
    cs[half + i] = std::sin(theta) * mscale;
  }
}

void check_rope_args(int head_dim, int rot_dims) {
  LADDER_CHECK(rot_dims > 0 && rot_dims % 2 == 0 && rot_dims <= head_dim,
               "rope: rot_dims must be even and within head_dim");
}

}  // namespace

void rms_norm(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* y) {
  HWY_DYNAMIC_DISPATCH(RmsNorm)(x, weight, rows, n, eps, y);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate, up, n, out);
}

void gelu_mul(const float* gate, const float* up, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(GeluMul)(gate, up, n, out);
}

void gated_activation(GatedActivation act, const float* gate, const float* up, int64_t n, float* out) {
  if (act == GatedActivation::kGeluTanh) {
    gelu_mul(gate, up, n, out);
  } else {
    silu_mul(gate, up, n, out);
  }
}

void soft_cap(float* x, int64_t n, float cap) {
  LADDER_CHECK(cap > 0.0f && std::isfinite(cap), "soft_cap: the cap must be positive");
  HWY_DYNAMIC_DISPATCH(SoftCap)(x, n, cap);
}

void softmax(float* x, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Softmax)(x, n);
}

void rope(float* x, int n_heads, int head_dim, int rot_dims, int64_t pos, const float* inv_freq,
          RopeStyle style, float mscale) {
  check_rope_args(head_dim, rot_dims);
  thread_local std::vector<float> cs;
  rope_angles(rot_dims, pos, inv_freq, mscale, cs);
  HWY_DYNAMIC_DISPATCH(RopeApply)(x, n_heads, head_dim, rot_dims, cs.data(), style == RopeStyle::kNeox);
}

void rms_norm_reference(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[r * n + i]) * x[r * n + i];
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = static_cast<float>(x[r * n + i] * scale * weight[i]);
  }
}

void silu_mul_reference(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

void gelu_mul_reference(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = gate[i];
    const double gelu = 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
    out[i] = static_cast<float>(gelu * up[i]);
  }
}

void soft_cap_reference(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(cap * std::tanh(static_cast<double>(x[i]) / cap));
}

void softmax_reference(float* x, int64_t n) {
  if (n <= 0) return;
  double mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, static_cast<double>(x[i]));
  double sum = 0.0;
  std::vector<double> e(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) sum += e[i] = std::exp(x[i] - mx);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(e[i] / sum);
}

void rope_reference(float* x, int n_heads, int head_dim, int rot_dims, int64_t pos, const float* inv_freq,
                    RopeStyle style, float mscale) {
  check_rope_args(head_dim, rot_dims);
  std::vector<float> cs;
  rope_angles(rot_dims, pos, inv_freq, mscale, cs);
  const int half = rot_dims / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int i = 0; i < half; ++i) {
      const float c = cs[i], s = cs[half + i];
      const int i0 = style == RopeStyle::kNeox ? i : 2 * i;
      const int i1 = style == RopeStyle::kNeox ? i + half : 2 * i + 1;
      const float a = v[i0], b = v[i1];
      v[i0] = a * c - b * s;
      v[i1] = a * s + b * c;
    }
  }
}

}  // namespace ladder::ops
#endif  // HWY_ONCE
