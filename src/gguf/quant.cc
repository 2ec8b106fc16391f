#include "gguf/quant.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/half.h"

namespace ladder::gguf {
namespace {

// Rounds to nearest and clamps to [lo, hi] without a float->int conversion
// of an out-of-range value or NaN (undefined behaviour); NaN maps to lo.
int round_clamp(float v, int lo, int hi) {
  if (!(v >= static_cast<float>(lo))) return lo;
  if (v >= static_cast<float>(hi)) return hi;
  return static_cast<int>(std::nearbyint(v));
}

float inverse_or_zero(float d) {
  return d != 0.0f ? 1.0f / d : 0.0f;
}

// ---- 32-element blocks ---------------------------------------------------

void dequant_q4_0(const BlockQ4_0& b, float* y) {  // y: [32]
  const float d = f16_to_f32(b.d);
  for (int j = 0; j < kQK4_0 / 2; ++j) {
    y[j] = static_cast<float>((b.qs[j] & 0x0F) - 8) * d;
    y[j + kQK4_0 / 2] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
  }
}

void dequant_q4_1(const BlockQ4_1& b, float* y) {
  const float d = f16_to_f32(b.d);
  const float m = f16_to_f32(b.m);
  for (int j = 0; j < kQK4_1 / 2; ++j) {
    y[j] = static_cast<float>(b.qs[j] & 0x0F) * d + m;
    y[j + kQK4_1 / 2] = static_cast<float>(b.qs[j] >> 4) * d + m;
  }
}

// Bit j of qh is the fifth bit of element j (j in 0..31).
uint32_t load_qh(const uint8_t* qh) {
  uint32_t v;
  std::memcpy(&v, qh, 4);
  return v;
}

void dequant_q5_0(const BlockQ5_0& b, float* y) {
  const float d = f16_to_f32(b.d);
  const uint32_t qh = load_qh(b.qh);
  for (int j = 0; j < kQK5_0 / 2; ++j) {
    const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
    const int hi1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
    y[j] = static_cast<float>(((b.qs[j] & 0x0F) | hi0) - 16) * d;
    y[j + kQK5_0 / 2] = static_cast<float>(((b.qs[j] >> 4) | hi1) - 16) * d;
  }
}

void dequant_q5_1(const BlockQ5_1& b, float* y) {
  const float d = f16_to_f32(b.d);
  const float m = f16_to_f32(b.m);
  const uint32_t qh = load_qh(b.qh);
  for (int j = 0; j < kQK5_1 / 2; ++j) {
    const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
    const int hi1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
    y[j] = static_cast<float>((b.qs[j] & 0x0F) | hi0) * d + m;
    y[j + kQK5_1 / 2] = static_cast<float>((b.qs[j] >> 4) | hi1) * d + m;
  }
}

void dequant_q8_0(const BlockQ8_0& b, float* y) {
  const float d = f16_to_f32(b.d);
  for (int j = 0; j < kQK8_0; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
}

// Symmetric blocks: d = (signed value of largest magnitude) / -half_range, so
// that value lands exactly on the most negative level (ggml's choice).
void quant_q4_0(const float* x, BlockQ4_0& b) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kQK4_0; ++j) {
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  }
  const float d = max / -8.0f;
  b.d = f32_to_f16(d);
  const float id = inverse_or_zero(f16_to_f32(b.d));
  for (int j = 0; j < kQK4_0 / 2; ++j) {
    const int q0 = round_clamp(x[j] * id + 8.0f, 0, 15);
    const int q1 = round_clamp(x[j + kQK4_0 / 2] * id + 8.0f, 0, 15);
    b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

void quant_q4_1(const float* x, BlockQ4_1& b) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < kQK4_1; ++j) lo = std::min(lo, x[j]), hi = std::max(hi, x[j]);
  b.d = f32_to_f16((hi - lo) / 15.0f);
  b.m = f32_to_f16(lo);
  const float id = inverse_or_zero(f16_to_f32(b.d));
  const float m = f16_to_f32(b.m);
  for (int j = 0; j < kQK4_1 / 2; ++j) {
    const int q0 = round_clamp((x[j] - m) * id, 0, 15);
    const int q1 = round_clamp((x[j + kQK4_1 / 2] - m) * id, 0, 15);
    b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

void store_qh(uint32_t qh, uint8_t* out) {
  std::memcpy(out, &qh, 4);
}

void quant_q5_0(const float* x, BlockQ5_0& b) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kQK5_0; ++j) {
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  }
  b.d = f32_to_f16(max / -16.0f);
  const float id = inverse_or_zero(f16_to_f32(b.d));
  uint32_t qh = 0;
  for (int j = 0; j < kQK5_0 / 2; ++j) {
    const int q0 = round_clamp(x[j] * id + 16.0f, 0, 31);
    const int q1 = round_clamp(x[j + kQK5_0 / 2] * id + 16.0f, 0, 31);
    b.qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
    qh |= static_cast<uint32_t>(q0 >> 4) << j;
    qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
  }
  store_qh(qh, b.qh);
}

void quant_q5_1(const float* x, BlockQ5_1& b) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < kQK5_1; ++j) lo = std::min(lo, x[j]), hi = std::max(hi, x[j]);
  b.d = f32_to_f16((hi - lo) / 31.0f);
  b.m = f32_to_f16(lo);
  const float id = inverse_or_zero(f16_to_f32(b.d));
  const float m = f16_to_f32(b.m);
  uint32_t qh = 0;
  for (int j = 0; j < kQK5_1 / 2; ++j) {
    const int q0 = round_clamp((x[j] - m) * id, 0, 31);
    const int q1 = round_clamp((x[j + kQK5_1 / 2] - m) * id, 0, 31);
    b.qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
    qh |= static_cast<uint32_t>(q0 >> 4) << j;
    qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
  }
  store_qh(qh, b.qh);
}

void quant_q8_0(const float* x, BlockQ8_0& b) {
  float amax = 0.0f;
  for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
  b.d = f32_to_f16(amax / 127.0f);
  const float id = inverse_or_zero(f16_to_f32(b.d));
  for (int j = 0; j < kQK8_0; ++j) b.qs[j] = static_cast<int8_t>(round_clamp(x[j] * id, -127, 127));
}

// ---- K-quants: 256-element super-blocks ------------------------------------

// Q4_K / Q5_K pack 8 six-bit scales and 8 six-bit mins into 12 bytes (the
// layout at k_scale_min in quant.h).
void dequant_q4_k(const BlockQ4_K& b, float* y) {  // y: [256]
  const float d = f16_to_f32(b.d);
  const float dmin = f16_to_f32(b.dmin);
  // Each 64-element chunk j: low nibbles of qs[32j..32j+32) are sub-block 2j,
  // high nibbles sub-block 2j+1.
  for (int j = 0; j < 4; ++j) {
    int sc0, m0, sc1, m1;
    k_scale_min(2 * j, b.scales, &sc0, &m0);
    k_scale_min(2 * j + 1, b.scales, &sc1, &m1);
    const uint8_t* q = b.qs + 32 * j;
    for (int l = 0; l < 32; ++l) {
      y[64 * j + l] =
          d * static_cast<float>(sc0) * static_cast<float>(q[l] & 0x0F) - dmin * static_cast<float>(m0);
      y[64 * j + 32 + l] =
          d * static_cast<float>(sc1) * static_cast<float>(q[l] >> 4) - dmin * static_cast<float>(m1);
    }
  }
}

void dequant_q5_k(const BlockQ5_K& b, float* y) {
  const float d = f16_to_f32(b.d);
  const float dmin = f16_to_f32(b.dmin);
  // As Q4_K, plus bit 2j of qh[l] is the fifth bit of element 64j+l and bit
  // 2j+1 that of element 64j+32+l.
  for (int j = 0; j < 4; ++j) {
    int sc0, m0, sc1, m1;
    k_scale_min(2 * j, b.scales, &sc0, &m0);
    k_scale_min(2 * j + 1, b.scales, &sc1, &m1);
    const uint8_t* q = b.qs + 32 * j;
    for (int l = 0; l < 32; ++l) {
      const int v0 = (q[l] & 0x0F) | (((b.qh[l] >> (2 * j)) & 1) << 4);
      const int v1 = (q[l] >> 4) | (((b.qh[l] >> (2 * j + 1)) & 1) << 4);
      y[64 * j + l] = d * static_cast<float>(sc0) * static_cast<float>(v0) - dmin * static_cast<float>(m0);
      y[64 * j + 32 + l] =
          d * static_cast<float>(sc1) * static_cast<float>(v1) - dmin * static_cast<float>(m1);
    }
  }
}

void dequant_q6_k(const BlockQ6_K& b, float* y) {
  const float d = f16_to_f32(b.d);
  // Two 128-element halves h; within one, element 32k+l (k<4, l<32) takes
  // its low nibble from ql[64h + l + 32*(k&1)] (low nibble for k<2, high for
  // k>=2) and its top two bits from bits 2k..2k+1 of qh[32h + l]; its scale
  // is scales[(128h + 32k + l) / 16].
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    for (int l = 0; l < 32; ++l) {
      const int q[4] = {
          ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32,
          ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32,
          ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32,
          ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32,
      };
      for (int k = 0; k < 4; ++k) {
        const int e = 128 * h + 32 * k + l;
        y[e] = d * static_cast<float>(b.scales[e / 16]) * static_cast<float>(q[k]);
      }
    }
  }
}

void dequant_q8_k(const BlockQ8_K& b, float* y) {
  for (int j = 0; j < kQK_K; ++j) y[j] = b.d * static_cast<float>(b.qs[j]);
}

// Asymmetric 32-element sub-blocks x ~ d*sc*q - dmin*m with q in [0, nmax].
// Per sub-block: offset m covers -min (min clamped to <= 0, rounded up so no
// value falls below the grid), then the step d*sc covers max + offset (also
// rounded up, so no value is clipped at the top). Both are 6-bit integers
// against f16 super-block scales; the quants are chosen against the
// quantized scales, so scale rounding is not paid twice.
struct KScales {
  uint16_t d, dmin;
  int sc[8], m[8];
};

// Smallest f16 whose value is >= v (v >= 0, finite), so that v / f16 <= 1.
uint16_t f16_at_least(float v) {
  uint16_t h = f32_to_f16(v);
  if (f16_to_f32(h) < v && h < 0x7bff) ++h;  // positive halves are ordered like their bits
  return h;
}

int ceil_clamp(float v, int hi) {
  if (!(v > 0.0f)) return 0;
  if (v >= static_cast<float>(hi)) return hi;
  return static_cast<int>(std::ceil(v));
}

KScales choose_k_scales(const float* x, int nmax) {
  float lo[8], hi[8];
  float max_offset = 0.0f;
  for (int s = 0; s < 8; ++s) {
    lo[s] = x[32 * s], hi[s] = x[32 * s];
    for (int l = 1; l < 32; ++l)
      lo[s] = std::min(lo[s], x[32 * s + l]), hi[s] = std::max(hi[s], x[32 * s + l]);
    lo[s] = std::min(lo[s], 0.0f);
    max_offset = std::max(max_offset, -lo[s]);
  }
  KScales k{};
  k.dmin = f16_at_least(max_offset / 63.0f);
  const float dmin = f16_to_f32(k.dmin);
  float step[8];
  float max_step = 0.0f;
  for (int s = 0; s < 8; ++s) {
    k.m[s] = ceil_clamp(-lo[s] * inverse_or_zero(dmin), 63);
    step[s] = std::max(0.0f, hi[s] + dmin * static_cast<float>(k.m[s])) / static_cast<float>(nmax);
    max_step = std::max(max_step, step[s]);
  }
  k.d = f16_at_least(max_step / 63.0f);
  const float inv_d = inverse_or_zero(f16_to_f32(k.d));
  for (int s = 0; s < 8; ++s) k.sc[s] = ceil_clamp(step[s] * inv_d, 63);
  return k;
}

// q[e] for every element of the super-block given quantized scales.
void k_quants(const float* x, const KScales& k, int nmax, int* q) {  // q: [256]
  const float d = f16_to_f32(k.d);
  const float dmin = f16_to_f32(k.dmin);
  for (int s = 0; s < 8; ++s) {
    const float step = d * static_cast<float>(k.sc[s]);
    const float base = dmin * static_cast<float>(k.m[s]);
    const float inv = inverse_or_zero(step);
    for (int l = 0; l < 32; ++l) q[32 * s + l] = round_clamp((x[32 * s + l] + base) * inv, 0, nmax);
  }
}

void quant_q4_k(const float* x, BlockQ4_K& b) {
  const KScales k = choose_k_scales(x, 15);
  int q[kQK_K];
  k_quants(x, k, 15, q);
  b.d = k.d;
  b.dmin = k.dmin;
  pack_k_scale_min(k.sc, k.m, b.scales);
  pack_q4_k_levels(q, b.qs);
}

void quant_q5_k(const float* x, BlockQ5_K& b) {
  const KScales k = choose_k_scales(x, 31);
  int q[kQK_K];
  k_quants(x, k, 31, q);
  b.d = k.d;
  b.dmin = k.dmin;
  pack_k_scale_min(k.sc, k.m, b.scales);
  pack_q5_k_levels(q, b.qs, b.qh);
}

// Q6_K: 16 symmetric sub-blocks of 16, q in [-32, 31], int8 scales against
// one f16 super-block scale.
void quant_q6_k(const float* x, BlockQ6_K& b) {
  float sub_scale[16];
  float max_scale = 0.0f;
  for (int s = 0; s < 16; ++s) {
    float amax = 0.0f;
    for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(x[16 * s + l]));
    sub_scale[s] = amax / 31.0f;
    max_scale = std::max(max_scale, sub_scale[s]);
  }
  b.d = f16_at_least(max_scale / 127.0f);
  const float d = f16_to_f32(b.d);
  const float inv_d = inverse_or_zero(d);
  int q[kQK_K];
  for (int s = 0; s < 16; ++s) {
    // Rounded up: a smaller scale would clip the sub-block's largest values.
    b.scales[s] = static_cast<int8_t>(ceil_clamp(sub_scale[s] * inv_d, 127));
    const float inv = inverse_or_zero(d * static_cast<float>(b.scales[s]));
    for (int l = 0; l < 16; ++l) q[16 * s + l] = round_clamp(x[16 * s + l] * inv, -32, 31) + 32;  // 0..63
  }
  pack_q6_k_levels(q, b.ql, b.qh);
}

void quant_q8_k(const float* x, BlockQ8_K& b) {
  float amax = 0.0f;
  for (int j = 0; j < kQK_K; ++j) amax = std::max(amax, std::fabs(x[j]));
  b.d = amax / 127.0f;
  const float id = inverse_or_zero(b.d);
  for (int j = 0; j < kQK_K; ++j) b.qs[j] = static_cast<int8_t>(round_clamp(x[j] * id, -127, 127));
  for (int g = 0; g < kQK_K / 16; ++g) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) sum += b.qs[16 * g + l];
    b.bsums[g] = static_cast<int16_t>(sum);
  }
}

// Applies `fn(block, y)` to each block of a row; blocks are read with memcpy
// because a row inside a GGUF tensor need not be aligned for the struct.
template <typename Block, int kElems, typename Fn>
void for_each_block_in(const void* src, float* dst, size_t n, Fn fn) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (size_t i = 0; i < n / kElems; ++i) {
    Block b;
    std::memcpy(&b, bytes + i * sizeof(Block), sizeof(Block));
    fn(b, dst + i * kElems);
  }
}

template <typename Block, int kElems, typename Fn>
void for_each_block_out(const float* src, void* dst, size_t n, Fn fn) {
  auto* bytes = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < n / kElems; ++i) {
    Block b{};
    fn(src + i * kElems, b);
    std::memcpy(bytes + i * sizeof(Block), &b, sizeof(Block));
  }
}

Status check_length(TensorType type, size_t n) {
  const TensorTypeTraits& t = traits_of(type);
  if (n % t.block_elems != 0) {
    return invalid_argument(fmt::format("row of {} elements is not a multiple of the {} block size {}", n,
                                        t.name, t.block_elems));
  }
  return Status::ok();
}

}  // namespace

Status dequantize_row(TensorType type, const void* src, float* dst, size_t n) {
  LADDER_RETURN_IF_ERROR(check_length(type, n));
  const auto* bytes = static_cast<const uint8_t*>(src);
  switch (type) {
    case TensorType::kF32: std::memcpy(dst, src, n * sizeof(float)); return Status::ok();
    case TensorType::kF16:
    case TensorType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        dst[i] = type == TensorType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return Status::ok();
    case TensorType::kQ4_0:
      for_each_block_in<BlockQ4_0, kQK4_0>(src, dst, n, dequant_q4_0);
      return Status::ok();
    case TensorType::kQ4_1:
      for_each_block_in<BlockQ4_1, kQK4_1>(src, dst, n, dequant_q4_1);
      return Status::ok();
    case TensorType::kQ5_0:
      for_each_block_in<BlockQ5_0, kQK5_0>(src, dst, n, dequant_q5_0);
      return Status::ok();
    case TensorType::kQ5_1:
      for_each_block_in<BlockQ5_1, kQK5_1>(src, dst, n, dequant_q5_1);
      return Status::ok();
    case TensorType::kQ8_0:
      for_each_block_in<BlockQ8_0, kQK8_0>(src, dst, n, dequant_q8_0);
      return Status::ok();
    case TensorType::kQ4_K:
      for_each_block_in<BlockQ4_K, kQK_K>(src, dst, n, dequant_q4_k);
      return Status::ok();
    case TensorType::kQ5_K:
      for_each_block_in<BlockQ5_K, kQK_K>(src, dst, n, dequant_q5_k);
      return Status::ok();
    case TensorType::kQ6_K:
      for_each_block_in<BlockQ6_K, kQK_K>(src, dst, n, dequant_q6_k);
      return Status::ok();
    case TensorType::kQ8_K:
      for_each_block_in<BlockQ8_K, kQK_K>(src, dst, n, dequant_q8_k);
      return Status::ok();
    default: break;
  }
  return unimplemented(fmt::format("dequantizing {} is not supported", tensor_type_name(type)));
}

Status quantize_row(TensorType type, const float* src, void* dst, size_t n) {
  LADDER_RETURN_IF_ERROR(check_length(type, n));
  auto* bytes = static_cast<uint8_t*>(dst);
  switch (type) {
    case TensorType::kF32: std::memcpy(dst, src, n * sizeof(float)); return Status::ok();
    case TensorType::kF16:
    case TensorType::kBF16:
      for (size_t i = 0; i < n; ++i) {
        const uint16_t h = type == TensorType::kF16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
        std::memcpy(bytes + 2 * i, &h, 2);
      }
      return Status::ok();
    case TensorType::kQ4_0:
      for_each_block_out<BlockQ4_0, kQK4_0>(src, dst, n, quant_q4_0);
      return Status::ok();
    case TensorType::kQ4_1:
      for_each_block_out<BlockQ4_1, kQK4_1>(src, dst, n, quant_q4_1);
      return Status::ok();
    case TensorType::kQ5_0:
      for_each_block_out<BlockQ5_0, kQK5_0>(src, dst, n, quant_q5_0);
      return Status::ok();
    case TensorType::kQ5_1:
      for_each_block_out<BlockQ5_1, kQK5_1>(src, dst, n, quant_q5_1);
      return Status::ok();
    case TensorType::kQ8_0:
      for_each_block_out<BlockQ8_0, kQK8_0>(src, dst, n, quant_q8_0);
      return Status::ok();
    case TensorType::kQ4_K:
      for_each_block_out<BlockQ4_K, kQK_K>(src, dst, n, quant_q4_k);
      return Status::ok();
    case TensorType::kQ5_K:
      for_each_block_out<BlockQ5_K, kQK_K>(src, dst, n, quant_q5_k);
      return Status::ok();
    case TensorType::kQ6_K:
      for_each_block_out<BlockQ6_K, kQK_K>(src, dst, n, quant_q6_k);
      return Status::ok();
    case TensorType::kQ8_K:
      for_each_block_out<BlockQ8_K, kQK_K>(src, dst, n, quant_q8_k);
      return Status::ok();
    default: break;
  }
  return unimplemented(fmt::format("quantizing to {} is not supported", tensor_type_name(type)));
}

void pack_k_scale_min(const int* scales, const int* mins, uint8_t* out) {
  std::memset(out, 0, kKScaleSize);
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(scales[j] | ((scales[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>(mins[j] | ((mins[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((scales[j + 4] & 0x0F) | ((mins[j + 4] & 0x0F) << 4));
  }
}

void pack_q4_k_levels(const int* q, uint8_t* qs) {
  for (int j = 0; j < 4; ++j) {
    for (int l = 0; l < 32; ++l) qs[32 * j + l] = static_cast<uint8_t>(q[64 * j + l] | (q[64 * j + 32 + l] << 4));
  }
}

void pack_q5_k_levels(const int* q, uint8_t* qs, uint8_t* qh) {
  std::memset(qh, 0, kQK_K / 8);
  for (int j = 0; j < 4; ++j) {
    for (int l = 0; l < 32; ++l) {
      const int v0 = q[64 * j + l], v1 = q[64 * j + 32 + l];
      qs[32 * j + l] = static_cast<uint8_t>((v0 & 0x0F) | ((v1 & 0x0F) << 4));
      qh[l] = static_cast<uint8_t>(qh[l] | ((v0 >> 4) << (2 * j)) | ((v1 >> 4) << (2 * j + 1)));
    }
  }
}

void pack_q6_k_levels(const int* q, uint8_t* ql, uint8_t* qh) {
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const int* e = q + 128 * h + l;
      const int q0 = e[0], q1 = e[32], q2 = e[64], q3 = e[96];
      ql[64 * h + l] = static_cast<uint8_t>((q0 & 0x0F) | ((q2 & 0x0F) << 4));
      ql[64 * h + l + 32] = static_cast<uint8_t>((q1 & 0x0F) | ((q3 & 0x0F) << 4));
      qh[32 * h + l] = static_cast<uint8_t>((q0 >> 4) | ((q1 >> 4) << 2) | ((q2 >> 4) << 4) | ((q3 >> 4) << 6));
    }
  }
}

}  // namespace ladder::gguf
