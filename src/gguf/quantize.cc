#include "gguf/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/half.h"
#include "gguf/quant.h"

namespace ladder::gguf {
namespace {

// Rounds to nearest and clamps to [lo, hi]; NaN maps to lo (no undefined
// float->int conversion).
int nearest(float v, int lo, int hi) {
  if (!(v >= static_cast<float>(lo))) return lo;
  if (v >= static_cast<float>(hi)) return hi;
  return static_cast<int>(std::nearbyint(v));
}

float ratio_or_zero(float a, float b) {
  return b != 0.0f ? a / b : 0.0f;
}

// x ~ scale * q + offset.
struct Affine {
  float scale = 0.0f;
  float offset = 0.0f;
};

// Least squares for scale and offset given the levels q, with the formats'
// constraints: scale >= 0, offset <= 0 (the offset is stored as a
// non-negative "min" that is subtracted).
Affine fit_affine(const float* x, const int* q, int n) {
  double sq = 0, sx = 0, sqq = 0, sqx = 0;
  for (int i = 0; i < n; ++i) sq += q[i], sx += x[i], sqq += double(q[i]) * q[i], sqx += double(q[i]) * x[i];
  const double den = n * sqq - sq * sq;
  double a = den > 0 ? (n * sqx - sq * sx) / den : 0.0;
  double b = (sx - a * sq) / n;
  if (a < 0) a = 0, b = sx / n;
  if (b > 0) b = 0, a = sqq > 0 ? std::max(0.0, sqx / sqq) : 0.0;
  return {static_cast<float>(a), static_cast<float>(b)};
}

double squared_error(const float* x, const int* q, int n, float scale, float offset) {
  double e = 0;
  for (int i = 0; i < n; ++i) {
    const double d = double(scale) * q[i] + offset - x[i];
    e += d * d;
  }
  return e;
}

// The affine grid of nmax + 1 levels that fits one sub-block best among
// grids stretched by nmax - 1 .. nmax + 1 steps over its range.
Affine search_affine(const float* x, int n, int nmax) {
  float lo = 0.0f, hi = x[0];
  for (int i = 0; i < n; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  if (!(hi > lo)) return {0.0f, lo};  // constant (or non-finite) block
  Affine best{(hi - lo) / static_cast<float>(nmax), lo};
  double best_err = std::numeric_limits<double>::infinity();
  int q[32];
  for (int k = -10; k <= 10; ++k) {
    const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(k)) / (hi - lo);
    for (int i = 0; i < n; ++i) q[i] = nearest((x[i] - lo) * iscale, 0, nmax);
    const Affine f = fit_affine(x, q, n);
    const double err = squared_error(x, q, n, f.scale, f.offset);
    if (err < best_err) best_err = err, best = f;
  }
  return best;
}

// The symmetric scale (x ~ scale * q, q in [-32, 31]) that fits a 16-element
// sub-block best among grids putting its largest magnitude at -32 +- 0.9.
float search_symmetric(const float* x, int n) {
  float extreme = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > std::fabs(extreme)) extreme = x[i];
  }
  if (extreme == 0.0f) return 0.0f;
  float best = -extreme / 32.0f;
  double best_err = std::numeric_limits<double>::infinity();
  int q[16];
  for (int k = -9; k <= 9; ++k) {
    const float iscale = -(32.0f + 0.1f * static_cast<float>(k)) / extreme;
    double sqq = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      q[i] = nearest(x[i] * iscale, -32, 31);
      sqq += double(q[i]) * q[i], sqx += double(q[i]) * x[i];
    }
    if (sqq == 0) continue;
    const auto scale = static_cast<float>(sqx / sqq);
    const double err = squared_error(x, q, n, scale, 0.0f);
    if (err < best_err) best_err = err, best = scale;
  }
  return best;
}

// Q4_K / Q5_K: 8 sub-blocks of 32, x ~ d*sc*q - dmin*m with 6-bit sc and m.
// Fills d, dmin, sc, m and the levels q[256].
void fit_k_super_block(const float* x, int nmax, uint16_t& d_bits, uint16_t& dmin_bits, int* sc, int* m,
                       int* q) {
  Affine sub[8];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int s = 0; s < 8; ++s) {
    sub[s] = search_affine(x + 32 * s, 32, nmax);
    max_scale = std::max(max_scale, sub[s].scale);
    max_min = std::max(max_min, -sub[s].offset);
  }
  d_bits = f32_to_f16(max_scale / 63.0f);
  dmin_bits = f32_to_f16(max_min / 63.0f);
  const float d = f16_to_f32(d_bits), dmin = f16_to_f32(dmin_bits);
  for (int s = 0; s < 8; ++s) {
    sc[s] = nearest(ratio_or_zero(sub[s].scale, d), 0, 63);
    m[s] = nearest(ratio_or_zero(-sub[s].offset, dmin), 0, 63);
    const float step = d * static_cast<float>(sc[s]), base = dmin * static_cast<float>(m[s]);
    for (int l = 0; l < 32; ++l) q[32 * s + l] = nearest(ratio_or_zero(x[32 * s + l] + base, step), 0, nmax);
  }
}

void fit_q4_k(const float* x, BlockQ4_K& b) {
  int sc[8], m[8], q[kQK_K];
  fit_k_super_block(x, 15, b.d, b.dmin, sc, m, q);
  pack_k_scale_min(sc, m, b.scales);
  pack_q4_k_levels(q, b.qs);
}

void fit_q5_k(const float* x, BlockQ5_K& b) {
  int sc[8], m[8], q[kQK_K];
  fit_k_super_block(x, 31, b.d, b.dmin, sc, m, q);
  pack_k_scale_min(sc, m, b.scales);
  pack_q5_k_levels(q, b.qs, b.qh);
}

// Q6_K: 16 sub-blocks of 16, x ~ d*scale*q with signed 8-bit scales and q in
// [-32, 31] stored offset by 32.
void fit_q6_k(const float* x, BlockQ6_K& b) {
  float sub[16];
  float max_abs = 0.0f;
  for (int s = 0; s < 16; ++s) {
    sub[s] = search_symmetric(x + 16 * s, 16);
    max_abs = std::max(max_abs, std::fabs(sub[s]));
  }
  b.d = f32_to_f16(max_abs / 127.0f);
  const float d = f16_to_f32(b.d);
  int q[kQK_K];
  for (int s = 0; s < 16; ++s) {
    const int scale = nearest(ratio_or_zero(sub[s], d), -127, 127);
    b.scales[s] = static_cast<int8_t>(scale);
    const float step = d * static_cast<float>(scale);
    for (int l = 0; l < 16; ++l) q[16 * s + l] = nearest(ratio_or_zero(x[16 * s + l], step), -32, 31) + 32;
  }
  pack_q6_k_levels(q, b.ql, b.qh);
}

template <typename Block, typename Fn>
void fit_blocks(const float* src, void* dst, size_t n, Fn fn) {
  auto* bytes = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < n / kQK_K; ++i) {
    Block b{};
    fn(src + i * kQK_K, b);
    std::memcpy(bytes + i * sizeof(Block), &b, sizeof(Block));
  }
}

}  // namespace

Status quantize_row_fitted(TensorType type, const float* src, void* dst, size_t n) {
  if (type != TensorType::kQ4_K && type != TensorType::kQ5_K && type != TensorType::kQ6_K) {
    return quantize_row(type, src, dst, n);
  }
  if (n % kQK_K != 0) return quantize_row(type, src, dst, n);  // its error names the block size
  if (type == TensorType::kQ4_K) fit_blocks<BlockQ4_K>(src, dst, n, fit_q4_k);
  if (type == TensorType::kQ5_K) fit_blocks<BlockQ5_K>(src, dst, n, fit_q5_k);
  if (type == TensorType::kQ6_K) fit_blocks<BlockQ6_K>(src, dst, n, fit_q6_k);
  return Status::ok();
}

}  // namespace ladder::gguf
