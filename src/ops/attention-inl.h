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
#include "ops/attention_internal.h"

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

// Sum over keys of scores[j] * V_j for NV output vectors starting at lane
// i0: the NV accumulators stay in registers while the values stream past
// once, and each lane is the plain chain acc = fma(p_j, v_j, acc) in key order.
template <bool kF16, int NV>
HWY_INLINE void weighted_values(const PagedKvLayer& v, const int32_t* block_table, int64_t n_keys, int kvh,
                                const float* scores, int64_t i0, float* out) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  hn::Vec<DF> acc[NV];
  for (int a = 0; a < NV; ++a) acc[a] = hn::Zero(d);
  for_each_key(v, block_table, n_keys, kvh, [&](int64_t j, const uint8_t* vp) {
    const auto p = hn::Set(d, scores[j]);
    for (int a = 0; a < NV; ++a) acc[a] = hn::MulAdd(p, load_kv<kF16>(d, vp, i0 + a * N), acc[a]);
  });
  for (int a = 0; a < NV; ++a) hn::StoreU(acc[a], d, out + i0 + a * N);
}

// Output vectors held in registers per pass over the values.
constexpr int kMaxValueVectors = 8;

template <bool kF16>
void weighted_values_n(int nv, const PagedKvLayer& v, const int32_t* block_table, int64_t n_keys, int kvh,
                       const float* scores, int64_t i0, float* out) {
  switch (nv) {
    case 1: return weighted_values<kF16, 1>(v, block_table, n_keys, kvh, scores, i0, out);
    case 2: return weighted_values<kF16, 2>(v, block_table, n_keys, kvh, scores, i0, out);
    case 3: return weighted_values<kF16, 3>(v, block_table, n_keys, kvh, scores, i0, out);
    case 4: return weighted_values<kF16, 4>(v, block_table, n_keys, kvh, scores, i0, out);
    case 5: return weighted_values<kF16, 5>(v, block_table, n_keys, kvh, scores, i0, out);
    case 6: return weighted_values<kF16, 6>(v, block_table, n_keys, kvh, scores, i0, out);
    case 7: return weighted_values<kF16, 7>(v, block_table, n_keys, kvh, scores, i0, out);
    default: return weighted_values<kF16, kMaxValueVectors>(v, block_table, n_keys, kvh, scores, i0, out);
  }
}

// out[head_dim] = softmax(scale * q.K^T) V over positions [0, n_keys).
// Every key's score is two vector accumulators over head_dim (even and odd
// vectors) added and reduced once, and every output element sums p_j * v_j
// in key order: the arithmetic is fixed by key position alone.
template <bool kF16>
void attend_one(const float* q, int64_t n_keys, int kvh, const PagedKvLayer& k, const PagedKvLayer& v,
                const int32_t* block_table, float scale, float* out, std::vector<float>& scores) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t hd = k.head_dim;
  scores.resize(static_cast<size_t>(n_keys));
  float mx = -INFINITY;
  for_each_key(k, block_table, n_keys, kvh, [&](int64_t j, const uint8_t* kp) {
    auto acc0 = hn::Zero(d);
    auto acc1 = hn::Zero(d);
    int64_t i = 0;
    for (; i + 2 * N <= hd; i += 2 * N) {
      acc0 = hn::MulAdd(hn::LoadU(d, q + i), load_kv<kF16>(d, kp, i), acc0);
      acc1 = hn::MulAdd(hn::LoadU(d, q + i + N), load_kv<kF16>(d, kp, i + N), acc1);
    }
    if (i + N <= hd) {
      acc0 = hn::MulAdd(hn::LoadU(d, q + i), load_kv<kF16>(d, kp, i), acc0);
      i += N;
    }
    float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1)));
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
  int64_t i = 0;
  while (i + N <= hd) {
    const int nv = static_cast<int>(std::min<int64_t>(kMaxValueVectors, (hd - i) / N));
    weighted_values_n<kF16>(nv, v, block_table, n_keys, kvh, scores.data(), i, out);
    i += nv * N;
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

// Tasks [begin, end) of the n_rows * n_heads (query row, head) pairs, row-major.
void AttentionTasks(const detail::AttentionArgs& a, int64_t begin, int64_t end) {
  thread_local std::vector<float> scores;
  const int group = a.n_heads / a.k->n_kv_heads;
  const int64_t hd = a.k->head_dim;
  for (int64_t task = begin; task < end; ++task) {
    const int64_t row = task / a.n_heads;
    const int h = static_cast<int>(task % a.n_heads);
    const float* qv = a.q + (row * a.n_heads + h) * hd;
    float* ov = a.out + (row * a.n_heads + h) * hd;
    const int64_t n_keys = static_cast<int64_t>(a.q_pos[row]) + 1;
    const int32_t* table = a.row_tables[row];
    if (a.k->dtype == TensorType::kF16) {
      attend_one<true>(qv, n_keys, h / group, *a.k, *a.v, table, a.scale, ov, scores);
    } else {
      attend_one<false>(qv, n_keys, h / group, *a.k, *a.v, table, a.scale, ov, scores);
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
