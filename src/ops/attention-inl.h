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

// Address of the head_dim vector of KV head `kvh` at sequence position pos.
HWY_INLINE const uint8_t* kv_vec(const PagedKvLayer& l, const int32_t* block_table, int64_t pos, int kvh) {
  const size_t elem = l.dtype == TensorType::kF16 ? 2 : 4;
  const int64_t block = block_table[pos / l.block_size];
  const int64_t slot = pos % l.block_size;
  return l.base + static_cast<size_t>(block) * l.block_stride_bytes +
         (static_cast<size_t>(slot) * l.n_kv_heads + kvh) * l.head_dim * elem;
}

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

// out[head_dim] = softmax(scale * q.K^T) V over positions [0, n_keys).
template <bool kF16>
void attend_one(const float* q, int64_t n_keys, int kvh, const PagedKvLayer& k, const PagedKvLayer& v,
                const int32_t* block_table, float scale, float* out, std::vector<float>& scores) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t hd = k.head_dim;
  scores.resize(static_cast<size_t>(n_keys));
  float mx = -INFINITY;
  for (int64_t j = 0; j < n_keys; ++j) {
    const uint8_t* kp = kv_vec(k, block_table, j, kvh);
    auto acc = hn::Zero(d);
    int64_t i = 0;
    for (; i + N <= hd; i += N) acc = hn::MulAdd(hn::LoadU(d, q + i), load_kv<kF16>(d, kp, i), acc);
    float s = hn::GetLane(hn::SumOfLanes(d, acc));
    for (; i < hd; ++i) s += q[i] * kv_scalar<kF16>(kp, i);
    s *= scale;
    scores[j] = s;
    mx = std::max(mx, s);
  }
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
  // Weighted sum of values, head_dim lanes at a time.
  std::fill(out, out + hd, 0.0f);
  for (j = 0; j < n_keys; ++j) {
    const uint8_t* vp = kv_vec(v, block_table, j, kvh);
    const auto p = hn::Set(d, scores[j]);
    int64_t i = 0;
    for (; i + N <= hd; i += N)
      hn::StoreU(hn::MulAdd(p, load_kv<kF16>(d, vp, i), hn::LoadU(d, out + i)), d, out + i);
    for (; i < hd; ++i) out[i] += scores[j] * kv_scalar<kF16>(vp, i);
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < hd; ++i) out[i] *= inv;
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
