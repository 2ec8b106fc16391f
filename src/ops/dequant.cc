// Scalar dequantization of ggml block types (layouts in common/tensor_type.h)
// and row-wise activation quantization. These are the references every SIMD
// kernel is tested against, and the path for types without a fast kernel.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/check.h"
#include "common/half.h"
#include "ops/matmul_internal.h"

namespace ladder::ops::detail {
namespace {

void k4_scale_min(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

void dequant_q4_0(const BlockQ4_0* b, float* y) {
  const float d = f16_to_f32(b->d);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((b->qs[j] & 0xF) - 8) * d;
    y[j + 16] = static_cast<float>((b->qs[j] >> 4) - 8) * d;
  }
}

void dequant_q4_1(const BlockQ4_1* b, float* y) {
  const float d = f16_to_f32(b->d);
  const float m = f16_to_f32(b->m);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(b->qs[j] & 0xF) * d + m;
    y[j + 16] = static_cast<float>(b->qs[j] >> 4) * d + m;
  }
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void dequant_q5_0(const BlockQ5_0* b, float* y) {
  const float d = f16_to_f32(b->d);
  const uint32_t qh = load_u32(b->qh);
  for (int j = 0; j < 16; ++j) {
    const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
    const int hi1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
    y[j] = static_cast<float>(((b->qs[j] & 0xF) | hi0) - 16) * d;
    y[j + 16] = static_cast<float>(((b->qs[j] >> 4) | hi1) - 16) * d;
  }
}

void dequant_q5_1(const BlockQ5_1* b, float* y) {
  const float d = f16_to_f32(b->d);
  const float m = f16_to_f32(b->m);
  const uint32_t qh = load_u32(b->qh);
  for (int j = 0; j < 16; ++j) {
    const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
    const int hi1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
    y[j] = static_cast<float>((b->qs[j] & 0xF) | hi0) * d + m;
    y[j + 16] = static_cast<float>((b->qs[j] >> 4) | hi1) * d + m;
  }
}

void dequant_q8_0(const BlockQ8_0* b, float* y) {
  const float d = f16_to_f32(b->d);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(b->qs[j]) * d;
}

void dequant_q4_k(const BlockQ4_K* b, float* y) {
  const float d = f16_to_f32(b->d);
  const float dmin = f16_to_f32(b->dmin);
  for (int k = 0; k < 4; ++k) {  // 64 elements: low nibbles, then high nibbles
    int sc0, m0, sc1, m1;
    k4_scale_min(2 * k, b->scales, &sc0, &m0);
    k4_scale_min(2 * k + 1, b->scales, &sc1, &m1);
    const float d0 = d * static_cast<float>(sc0), min0 = dmin * static_cast<float>(m0);
    const float d1 = d * static_cast<float>(sc1), min1 = dmin * static_cast<float>(m1);
    const uint8_t* q = b->qs + 32 * k;
    for (int l = 0; l < 32; ++l) {
      y[64 * k + l] = d0 * static_cast<float>(q[l] & 0xF) - min0;
      y[64 * k + 32 + l] = d1 * static_cast<float>(q[l] >> 4) - min1;
    }
  }
}

void dequant_q5_k(const BlockQ5_K* b, float* y) {
  const float d = f16_to_f32(b->d);
  const float dmin = f16_to_f32(b->dmin);
  for (int k = 0; k < 4; ++k) {
    int sc0, m0, sc1, m1;
    k4_scale_min(2 * k, b->scales, &sc0, &m0);
    k4_scale_min(2 * k + 1, b->scales, &sc1, &m1);
    const float d0 = d * static_cast<float>(sc0), min0 = dmin * static_cast<float>(m0);
    const float d1 = d * static_cast<float>(sc1), min1 = dmin * static_cast<float>(m1);
    const uint8_t* q = b->qs + 32 * k;
    const uint8_t u0 = static_cast<uint8_t>(1u << (2 * k));
    const uint8_t u1 = static_cast<uint8_t>(2u << (2 * k));
    for (int l = 0; l < 32; ++l) {
      y[64 * k + l] = d0 * static_cast<float>((q[l] & 0xF) + ((b->qh[l] & u0) ? 16 : 0)) - min0;
      y[64 * k + 32 + l] = d1 * static_cast<float>((q[l] >> 4) + ((b->qh[l] & u1) ? 16 : 0)) - min1;
    }
  }
}

void dequant_q6_k(const BlockQ6_K* b, float* y) {
  const float d = f16_to_f32(b->d);
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b->ql + 64 * half;
    const uint8_t* qh = b->qh + 32 * half;
    const int8_t* sc = b->scales + 8 * half;
    float* out = y + 128 * half;
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      out[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      out[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      out[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      out[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
  }
}

void dequant_q8_k(const BlockQ8_K* b, float* y) {
  for (int j = 0; j < kQK_K; ++j) y[j] = b->d * static_cast<float>(b->qs[j]);
}

template <typename Block, void (*kFn)(const Block*, float*)>
void dequant_blocks(const void* src, float* dst, int64_t n, int block_elems) {
  const auto* blocks = static_cast<const Block*>(src);
  for (int64_t i = 0; i < n / block_elems; ++i) kFn(blocks + i, dst + i * block_elems);
}

}  // namespace

void dequantize_row_scalar(TensorType type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case TensorType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case TensorType::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(h[i]);
      return;
    }
    case TensorType::kBF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
      return;
    }
    case TensorType::kQ4_0: return dequant_blocks<BlockQ4_0, dequant_q4_0>(src, dst, n, 32);
    case TensorType::kQ4_1: return dequant_blocks<BlockQ4_1, dequant_q4_1>(src, dst, n, 32);
    case TensorType::kQ5_0: return dequant_blocks<BlockQ5_0, dequant_q5_0>(src, dst, n, 32);
    case TensorType::kQ5_1: return dequant_blocks<BlockQ5_1, dequant_q5_1>(src, dst, n, 32);
    case TensorType::kQ8_0: return dequant_blocks<BlockQ8_0, dequant_q8_0>(src, dst, n, 32);
    case TensorType::kQ4_K: return dequant_blocks<BlockQ4_K, dequant_q4_k>(src, dst, n, kQK_K);
    case TensorType::kQ5_K: return dequant_blocks<BlockQ5_K, dequant_q5_k>(src, dst, n, kQK_K);
    case TensorType::kQ6_K: return dequant_blocks<BlockQ6_K, dequant_q6_k>(src, dst, n, kQK_K);
    case TensorType::kQ8_K: return dequant_blocks<BlockQ8_K, dequant_q8_k>(src, dst, n, kQK_K);
    default: LADDER_CHECK(false, "dequantize_row_scalar: unsupported type (check_matmul_support first)");
  }
}

void quantize_activations(const float* x, int64_t rows, int64_t n_in, int8_t* xq, uint8_t* xu, float* xd,
                          float* xsum) {
  const int64_t nb = n_in / kActBlock;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      const float* v = x + r * n_in + b * kActBlock;
      int8_t* q = xq + r * n_in + b * kActBlock;
      float amax = 0.0f;
      for (int j = 0; j < kActBlock; ++j) amax = std::max(amax, std::fabs(v[j]));
      const float d = amax / 127.0f;
      const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
      int sum = 0;
      for (int j = 0; j < kActBlock; ++j) {
        // The clamp guards x*id rounding to just above 127.
        const float s = std::nearbyint(std::clamp(v[j] * id, -127.0f, 127.0f));
        const int qi = static_cast<int>(s);
        q[j] = static_cast<int8_t>(qi);
        xu[r * n_in + b * kActBlock + j] = static_cast<uint8_t>(qi + 128);
        sum += qi;
      }
      xd[r * nb + b] = d;
      xsum[r * nb + b] = d * static_cast<float>(sum);
    }
  }
}

}  // namespace ladder::ops::detail
