// Per-target paged attention and KV store, compiled once per Highway target
// through attention.cc. One (query, head) pair is one independent task: its
// scores, softmax and weighted sum of values run over key positions 0..q_pos
// in order, so the result cannot depend on which other queries share a call.

#if defined(LADDER_OPS_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LADDER_OPS_ATTENTION_INL_H_
#undef LADDER_OPS_ATTENTION_INL_H_
#else
#define LADDER_OPS_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/half.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "ops/attention.h"

HWY_BEFORE_NAMESPACE();
namespace ladder::ops::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

template <bool kF16>
HWY_INLINE hn::Vec<DF> load_kv(DF d, const uint8_t* p, int64_t i) {
  if constexpr (kF16) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p) + i));
  } else {
    return hn::LoadU(d, reinterpret_cast<const float*>(p) + i);
  }
}

template <bool kF16>
HWY_INLINE float kv_scalar(const uint8_t* p, int64_t i) {
  if constexpr (kF16) {
    return f16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
  } else {
    return reinterpret_cast<const float*>(p)[i];
  }
}

// Calls fn(j, p) for key positions j = 0..n_keys-1 in order, p pointing at
// KV head kvh of position j. Walks the block table block by block, so no
// division per key.
template <class Fn>
HWY_INLINE void for_each_key(const PagedKvLayer& l, const int32_t* block_table, int64_t n_keys, int kvh, Fn&& fn) {
  const size_t elem = l.dtype == TensorType::kF16 ? 2 : 4;
  const size_t token_stride = static_cast<size_t>(l.n_kv_heads) * static_cast<size_t>(l.head_dim) * elem;
  const size_t head_offset = static_cast<size_t>(kvh) * static_cast<size_t>(l.head_dim) * elem;
  int64_t j = 0;
  for (int64_t b = 0; j < n_keys; ++b) {
    const uint8_t* p = l.base + static_cast<size_t>(block_table[b]) * l.block_stride_bytes + head_offset;
    const int64_t end = std::min<int64_t>(j + l.block_size, n_keys);
    for (; j < end; ++j, p += token_stride) fn(j, p);
  }
}

// out[head_dim] = softmax(scale * q.K^T) V over positions [0, n_keys).
// Every key's score is one vector accumulator over head_dim reduced once, and
// every output element sums p_j * v_j in key order: the arithmetic is fixed
// by key position alone.
template <bool kF16>
void attend_one(const float* q, int64_t n_keys, int kvh, const PagedKvLayer& k, const PagedKvLayer& v,
                const int32_t* block_table, float scale, float* out, std::vector<float>& scores) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t hd = k.head_dim;
  scores.resize(static_cast<size_t>(n_keys));
  float mx = -INFINITY;
  for_each_key(k, block_table, n_keys, kvh, [&](int64_t j, const uint8_t* kp) {
    auto acc = hn::Zero(d);
    int64_t i = 0;
    for (; i + N <= hd; i += N) acc = hn::MulAdd(hn::LoadU(d, q + i), load_kv<kF16>(d, kp, i), acc);
    float s = hn::GetLane(hn::SumOfLanes(d, acc));
    for (; i < hd; ++i) s += q[i] * kv_scalar<kF16>(kp, i);
    s *= scale;
    scores[j] = s;
    mx = std::max(mx, s);
  });
  // Exponentials in place, their sum in one vector accumulator.
  const auto vm = hn::Set(d, mx);
  auto vsum = hn::Zero(d);
  int64_t j = 0;
  for (; j + N <= n_keys; j += N) {
    const auto e = hn::CallExp(d, hn::Sub(hn::LoadU(d, scores.data() + j), vm));
    hn::StoreU(e, d, scores.data() + j);
    vsum = hn::Add(vsum, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, vsum));
  for (; j < n_keys; ++j) {
    scores[j] = std::exp(scores[j] - mx);
    sum += scores[j];
  }
  // Weighted sum of values: each vector of output lanes stays in a register
  // while the keys stream past it, in key order.
  int64_t i = 0;
  for (; i + N <= hd; i += N) {
    auto acc = hn::Zero(d);
    for_each_key(v, block_table, n_keys, kvh, [&](int64_t jj, const uint8_t* vp) {
      acc = hn::MulAdd(hn::Set(d, scores[jj]), load_kv<kF16>(d, vp, i), acc);
    });
    hn::StoreU(acc, d, out + i);
  }
  for (; i < hd; ++i) {
    float acc = 0.0f;
    for_each_key(v, block_table, n_keys, kvh, [&](int64_t jj, const uint8_t* vp) {
      acc += scores[jj] * kv_scalar<kF16>(vp, i);
    });
    out[i] = acc;
  }
  const float inv = 1.0f / sum;
  for (int64_t e = 0; e < hd; ++e) out[e] *= inv;
}

// Tasks [begin, end) of the n_q * n_heads (query, head) pairs.
void AttentionRange(const float* q, const int32_t* q_pos, int n_heads, const PagedKvLayer& k,
                    const PagedKvLayer& v, const int32_t* block_table, float scale, float* out, int64_t begin,
                    int64_t end) {
  thread_local std::vector<float> scores;
  const int group = n_heads / k.n_kv_heads;
  const int64_t hd = k.head_dim;
  for (int64_t task = begin; task < end; ++task) {
    const int64_t qi = task / n_heads;
    const int h = static_cast<int>(task % n_heads);
    const float* qv = q + (qi * n_heads + h) * hd;
    float* ov = out + (qi * n_heads + h) * hd;
    const int64_t n_keys = static_cast<int64_t>(q_pos[qi]) + 1;
    if (k.dtype == TensorType::kF16) {
      attend_one<true>(qv, n_keys, h / group, k, v, block_table, scale, ov, scores);
    } else {
      attend_one<false>(qv, n_keys, h / group, k, v, block_table, scale, ov, scores);
    }
  }
}

void KvStore(const PagedKvLayer& layer, const int32_t* block_table, int64_t pos, const float* vec) {
  const int64_t n = static_cast<int64_t>(layer.n_kv_heads) * layer.head_dim;
  const int64_t block = block_table[pos / layer.block_size];
  const int64_t slot = pos % layer.block_size;
  uint8_t* dst = layer.base + static_cast<size_t>(block) * layer.block_stride_bytes;
  if (layer.dtype != TensorType::kF16) {
    std::copy(vec, vec + n, reinterpret_cast<float*>(dst) + slot * n);
    return;
  }
  uint16_t* h = reinterpret_cast<uint16_t*>(dst) + slot * n;
  const DF d;
  const hn::Rebind<hwy::float16_t, DF> dh;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  // Hardware F16 conversion (F16C / AVX-512) rounds to nearest even like
  // f32_to_f16; Highway's software fallback does not, so it takes the scalar path.
#if HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::DemoteTo(dh, hn::LoadU(d, vec + i)), dh, reinterpret_cast<hwy::float16_t*>(h + i));
  }
#else
  (void)d;
  (void)dh;
  (void)N;
#endif
  for (; i < n; ++i) h[i] = f32_to_f16(vec[i]);
}

}  // namespace ladder::ops::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LADDER_OPS_ATTENTION_INL_H_
