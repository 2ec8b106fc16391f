#include "ops/kv_codec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <vector>

#include "common/check.h"
#include "common/half.h"

namespace ladder::ops {
namespace {

constexpr float kF16Max = 65504.0f;

uint16_t f16_next_up(uint16_t h) {
  if (h == 0x8000u) h = 0;
  return (h & 0x8000u) != 0 ? static_cast<uint16_t>(h - 1) : static_cast<uint16_t>(h + 1);
}

uint16_t f16_next_down(uint16_t h) {
  if (h == 0) h = 0x8000u;
  return (h & 0x8000u) != 0 ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h - 1);
}

const uint16_t* as_f16(const uint8_t* p) {
  return reinterpret_cast<const uint16_t*>(p);
}
uint16_t* as_f16(uint8_t* p) {
  return reinterpret_cast<uint16_t*>(p);
}

uint8_t* block_ptr(const PagedKvLayer& l, int32_t block_id) {
  return l.base + static_cast<size_t>(block_id) * l.block_stride_bytes;
}

uint16_t* staging_ptr(const PagedKvLayer& l, int32_t block_id) {
  LADDER_CHECK(l.staging != nullptr && l.staging_slot != nullptr, "staged KV layer without staging slots");
  const int32_t slot = l.staging_slot[block_id];
  LADDER_CHECK(slot >= 0, "a partly filled Q4 KV block has no staging slot");
  return as_f16(l.staging + static_cast<size_t>(slot) * l.staging_stride_bytes);
}

// Scale and min of n values x[0], x[stride], ...: min rounded down, scale
// rounded up so that (x - min) / scale never exceeds 15.
void q4_params(const float* x, int n, int stride, uint16_t* scale, uint16_t* min) {
  float lo = x[0], hi = x[0];
  for (int t = 1; t < n; ++t) {
    lo = std::min(lo, x[t * stride]);
    hi = std::max(hi, x[t * stride]);
  }
  *min = f16_round_down(lo);
  *scale = f16_round_up((hi - f16_to_f32(*min)) / 15.0f);
}

uint8_t q4_code(float x, float scale, float min) {
  if (scale == 0.0f) return 0;
  const long q = std::lrint((x - min) / scale);
  return static_cast<uint8_t>(std::clamp<long>(q, 0, 15));
}

float q4_value(uint8_t code, const uint16_t* params) {
  return static_cast<float>(code) * f16_to_f32(params[0]) + f16_to_f32(params[1]);
}

}  // namespace

uint16_t f16_round_up(float x) {
  if (x > kF16Max) return f32_to_f16(kF16Max);
  if (x < -kF16Max) return f32_to_f16(-kF16Max);
  uint16_t h = f32_to_f16(x);
  if (f16_to_f32(h) < x) h = f16_next_up(h);
  return h;
}

uint16_t f16_round_down(float x) {
  if (x > kF16Max) return f32_to_f16(kF16Max);
  if (x < -kF16Max) return f32_to_f16(-kF16Max);
  uint16_t h = f32_to_f16(x);
  if (f16_to_f32(h) > x) h = f16_next_down(h);
  return h;
}

bool kv_dtype_supported(TensorType dtype) {
  return dtype == TensorType::kF32 || dtype == TensorType::kF16 || dtype == TensorType::kQ8_0 ||
         dtype == TensorType::kQ4_0;
}

bool kv_dtype_staged(TensorType dtype) {
  return dtype == TensorType::kQ4_0;
}

bool kv_dtype_quantized(TensorType dtype) {
  return dtype == TensorType::kQ8_0 || dtype == TensorType::kQ4_0;
}

bool kv_dtype_rotated(TensorType dtype) { return dtype == TensorType::kQ8_0; }

const char* kv_dtype_short_name(TensorType dtype) {
  switch (dtype) {
    case TensorType::kF32: return "f32";
    case TensorType::kF16: return "f16";
    case TensorType::kQ8_0: return "q8";
    case TensorType::kQ4_0: return "q4";
    default: return "unsupported";
  }
}

std::optional<TensorType> kv_dtype_from_short_name(std::string_view name) {
  for (TensorType t : {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0, TensorType::kQ4_0}) {
    const std::string_view n = kv_dtype_short_name(t);
    if (n.size() == name.size() &&
        std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) { return a == std::tolower(b); })) {
      return t;
    }
  }
  return std::nullopt;
}

int kv_channel_group(int head_dim) {
  return head_dim % 32 == 0 ? 32 : head_dim;
}

const char* kv_shape_problem(TensorType dtype, int block_size, int head_dim) {
  if (!kv_dtype_supported(dtype)) return "the KV format must be f32, f16, q8 or q4";
  if ((dtype == TensorType::kQ8_0 || dtype == TensorType::kQ4_0) && block_size % 2 != 0) {
    return "the q8 and q4 KV formats need an even block size";
  }
  if (dtype == TensorType::kQ4_0 && head_dim % 2 != 0) return "the q4 KV format needs an even head dim";
  return nullptr;
}

size_t kv_layer_block_bytes(TensorType dtype, KvLayout layout, int block_size, int n_kv_heads, int head_dim) {
  const auto bs = static_cast<size_t>(block_size), kvh = static_cast<size_t>(n_kv_heads),
             hd = static_cast<size_t>(head_dim);
  switch (dtype) {
    case TensorType::kF32: return bs * kvh * hd * 4;
    case TensorType::kF16: return bs * kvh * hd * 2;
    case TensorType::kQ8_0:
      return bs * kvh * (hd + 2 * (hd / static_cast<size_t>(kv_channel_group(head_dim))));
    case TensorType::kQ4_0:
      if (layout == KvLayout::kDimMajor) return kvh * hd * (4 + bs / 2);
      return bs * kvh * (4 * (hd / static_cast<size_t>(kv_channel_group(head_dim))) + hd / 2);
    default: LADDER_CHECK(false, "kv_layer_block_bytes: unsupported KV format");
  }
  return 0;
}

size_t kv_layer_staging_bytes(TensorType dtype, int block_size, int n_kv_heads, int head_dim) {
  if (!kv_dtype_staged(dtype)) return 0;
  return static_cast<size_t>(block_size) * static_cast<size_t>(n_kv_heads) * static_cast<size_t>(head_dim) *
         2;
}

float kv_decode_elem(const PagedKvLayer& l, const int32_t* block_table, int64_t pos, int kvh, int i,
                     int64_t n_keys) {
  const int64_t bs = l.block_size, hd = l.head_dim, nkv = l.n_kv_heads;
  const int64_t b = pos / bs, t = pos % bs;
  const int32_t id = block_table[b];
  const uint8_t* p = block_ptr(l, id);
  const int64_t e = kvh * hd + i;  // element within a token
  const bool k = l.layout == KvLayout::kDimMajor;
  switch (l.dtype) {
    case TensorType::kF32: return reinterpret_cast<const float*>(p)[k ? e * bs + t : t * nkv * hd + e];
    case TensorType::kF16: return f16_to_f32(as_f16(p)[k ? e * bs + t : t * nkv * hd + e]);
    case TensorType::kQ8_0: {
      const auto* q = reinterpret_cast<const int8_t*>(p);
      const uint16_t* scales = as_f16(p + bs * nkv * hd);
      const int64_t ng = hd / kv_channel_group(l.head_dim), gi = i / kv_channel_group(l.head_dim);
      const float s = f16_to_f32(scales[k ? (kvh * ng + gi) * bs + t : (t * nkv + kvh) * ng + gi]);
      return static_cast<float>(q[k ? e * bs + t : t * nkv * hd + e]) * s;
    }
    case TensorType::kQ4_0: {
      if ((b + 1) * bs > n_keys) return f16_to_f32(staging_ptr(l, id)[t * nkv * hd + e]);
      if (k) {
        const uint8_t byte = p[nkv * hd * 4 + e * (bs / 2) + t % (bs / 2)];
        return q4_value(t < bs / 2 ? byte & 0xF : byte >> 4, as_f16(p) + e * 2);
      }
      const int64_t g = kv_channel_group(l.head_dim), ng = hd / g;
      const uint8_t byte = p[bs * nkv * ng * 4 + (t * nkv + kvh) * (hd / 2) + i % (hd / 2)];
      return q4_value(i < hd / 2 ? byte & 0xF : byte >> 4, as_f16(p) + ((t * nkv + kvh) * ng + i / g) * 2);
    }
    default: LADDER_CHECK(false, "kv_decode_elem: unsupported KV format");
  }
  return 0.0f;
}

void kv_encode_token_q8(const PagedKvLayer& l, uint8_t* block, int64_t slot, const float* vec) {
  const int64_t bs = l.block_size, hd = l.head_dim, nkv = l.n_kv_heads;
  const bool k = l.layout == KvLayout::kDimMajor;
  const int64_t g = kv_channel_group(l.head_dim), ng = hd / g;
  auto* q = reinterpret_cast<int8_t*>(block);
  uint16_t* scales = as_f16(block + bs * nkv * hd);
  for (int64_t h = 0; h < nkv; ++h) {
    for (int64_t gi = 0; gi < ng; ++gi) {
      const float* x = vec + h * hd + gi * g;
      float amax = 0.0f;
      for (int64_t i = 0; i < g; ++i) amax = std::max(amax, std::fabs(x[i]));
      const uint16_t scale = f16_round_up(amax / 127.0f);
      scales[k ? (h * ng + gi) * bs + slot : (slot * nkv + h) * ng + gi] = scale;
      const float s = f16_to_f32(scale);
      for (int64_t i = 0; i < g; ++i) {
        const int64_t e = h * hd + gi * g + i;  // element within the token
        const long c = s == 0.0f ? 0 : std::clamp<long>(std::lrint(x[i] / s), -127, 127);
        q[k ? e * bs + slot : slot * nkv * hd + e] = static_cast<int8_t>(c);
      }
    }
  }
}

void kv_encode_token_staged(const PagedKvLayer& l, int32_t block_id, int64_t slot, const float* vec) {
  const int64_t n = static_cast<int64_t>(l.n_kv_heads) * l.head_dim;
  uint16_t* dst = staging_ptr(l, block_id) + slot * n;
  for (int64_t e = 0; e < n; ++e) dst[e] = f32_to_f16(vec[e]);
}

void kv_seal_block_q4(const PagedKvLayer& l, int32_t block_id) {
  const int bs = l.block_size, hd = l.head_dim, nkv = l.n_kv_heads;
  const uint16_t* stg = staging_ptr(l, block_id);
  const int n = nkv * hd;
  thread_local std::vector<float> x;  // [bs][n]
  x.resize(static_cast<size_t>(bs * n));
  for (int e = 0; e < bs * n; ++e) x[static_cast<size_t>(e)] = f16_to_f32(stg[e]);
  uint8_t* p = block_ptr(l, block_id);
  uint16_t* params = as_f16(p);
  if (l.layout == KvLayout::kDimMajor) {
    // Per channel e over the block's tokens.
    uint8_t* nib = p + static_cast<size_t>(n) * 4;
    for (int e = 0; e < n; ++e) {
      q4_params(x.data() + e, bs, n, &params[e * 2], &params[e * 2 + 1]);
      const float s = f16_to_f32(params[e * 2]), m = f16_to_f32(params[e * 2 + 1]);
      for (int t = 0; t < bs / 2; ++t) {
        const uint8_t lo = q4_code(x[static_cast<size_t>(t * n + e)], s, m);
        const uint8_t hi = q4_code(x[static_cast<size_t>((t + bs / 2) * n + e)], s, m);
        nib[e * (bs / 2) + t] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
    return;
  }
  // Per token and KV head, in groups of g channels.
  const int g = kv_channel_group(hd), ng = hd / g;
  uint8_t* nib = p + static_cast<size_t>(bs * nkv * ng) * 4;
  for (int t = 0; t < bs; ++t) {
    for (int h = 0; h < nkv; ++h) {
      const float* row = x.data() + t * n + h * hd;
      uint16_t* pr = params + (t * nkv + h) * ng * 2;
      for (int gi = 0; gi < ng; ++gi) q4_params(row + gi * g, g, 1, &pr[gi * 2], &pr[gi * 2 + 1]);
      uint8_t* out = nib + (t * nkv + h) * (hd / 2);
      for (int c = 0; c < hd / 2; ++c) {
        const int c2 = c + hd / 2;
        const uint8_t lo = q4_code(row[c], f16_to_f32(pr[(c / g) * 2]), f16_to_f32(pr[(c / g) * 2 + 1]));
        const uint8_t hi = q4_code(row[c2], f16_to_f32(pr[(c2 / g) * 2]), f16_to_f32(pr[(c2 / g) * 2 + 1]));
        out[c] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
  }
}

void kv_unseal_block_q4(const PagedKvLayer& l, int32_t block_id) {
  const int bs = l.block_size, hd = l.head_dim, nkv = l.n_kv_heads;
  uint16_t* stg = staging_ptr(l, block_id);
  // Read as a query past the block sees it: the sealed, quantized bytes.
  const int32_t table[1] = {block_id};
  for (int t = 0; t < bs; ++t) {
    for (int h = 0; h < nkv; ++h) {
      for (int i = 0; i < hd; ++i) {
        stg[(t * nkv + h) * hd + i] = f32_to_f16(kv_decode_elem(l, table, t, h, i, bs));
      }
    }
  }
}

}  // namespace ladder::ops
