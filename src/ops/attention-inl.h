// Per-target paged attention and KV store, compiled once per Highway target
// through attention.cc. Each (query, head) pair's scores, softmax and
// weighted sum of values run over key positions 0..q_pos in a fixed order;
// pairs that share a KV head are computed together in tiles (sharing every
// K and V load) with exactly the operations each would get alone, so a
// result cannot depend on which other queries share a call.

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
#include "ops/kv_codec.h"
#include "ops/kv_decode-inl.h"

HWY_BEFORE_NAMESPACE();
namespace ladder::ops::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

template <bool kF16, class D>
HWY_INLINE hn::Vec<D> load_kv(D d, const uint8_t* p, int64_t i) {
  if constexpr (kF16) {
    const hn::Rebind<hwy::float16_t, D> dh;
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

// Query tiles: a prefill chunk's consecutive queries go kQueryTile at a time,
// sharing every load of K and V; kAccRegs vector accumulators fit the
// register file with room for operands (32 registers on AVX-512, 16
// elsewhere). A tile computes each of its queries with exactly the operations
// that query would get alone, so tiling never changes a bit.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr int kQueryTile = 4;
constexpr int kAccRegs = 16;
#else
constexpr int kQueryTile = 2;
constexpr int kAccRegs = 8;
#endif

// Calls fn(j, p) for positions j in [j_begin, j_end) in order of a
// token-major layer (V), p pointing at KV head kvh of position j, skipping
// the positions of evicted blocks (table entry < 0). Walks the block table
// block by block, so no division per key.
template <class Fn>
HWY_INLINE void for_each_key(const PagedKvLayer& l, const int32_t* block_table, int64_t j_begin, int64_t j_end,
                             int kvh, Fn&& fn) {
  const size_t elem = l.dtype == TensorType::kF16 ? 2 : 4;
  const size_t token_stride = static_cast<size_t>(l.n_kv_heads) * static_cast<size_t>(l.head_dim) * elem;
  const size_t head_offset = static_cast<size_t>(kvh) * static_cast<size_t>(l.head_dim) * elem;
  const int64_t bs = l.block_size;
  int64_t j = j_begin;
  for (int64_t b = j_begin / bs; j < j_end; ++b) {
    const int64_t end = std::min<int64_t>((b + 1) * bs, j_end);
    if (block_table[b] < 0) {  // an evicted block: its keys are not attended
      j = end;
      continue;
    }
    const uint8_t* p = l.base + static_cast<size_t>(block_table[b]) * l.block_stride_bytes + head_offset +
                       static_cast<size_t>(j - b * bs) * token_stride;
    for (; j < end; ++j, p += token_stride) fn(j, p);
  }
}

// For Q queries, sums over keys [j_begin, j_end) of p[q][j] * V_j for NV
// output vectors from lane i0, starting from zero or continuing the sums in
// out[q]. The Q x NV accumulators stay in registers while the values stream
// past once; each lane of each query is the chain acc = fma(p_j, v_j, acc)
// in key order, however queries are tiled and keys split.
template <bool kF16, int Q, int NV>
HWY_INLINE void weighted_values(const PagedKvLayer& v, const int32_t* block_table, int64_t j_begin, int64_t j_end,
                                int kvh, const float* const* p, int64_t i0, float* const* out, bool start) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  hn::Vec<DF> acc[Q][NV];
  for (int qi = 0; qi < Q; ++qi)
    for (int a = 0; a < NV; ++a) acc[qi][a] = start ? hn::Zero(d) : hn::LoadU(d, out[qi] + i0 + a * N);
  for_each_key(v, block_table, j_begin, j_end, kvh, [&](int64_t j, const uint8_t* vp) {
    hn::Vec<DF> vv[NV];
    for (int a = 0; a < NV; ++a) vv[a] = load_kv<kF16>(d, vp, i0 + a * N);
    for (int qi = 0; qi < Q; ++qi) {
      const auto pj = hn::Set(d, p[qi][j]);
      for (int a = 0; a < NV; ++a) acc[qi][a] = hn::MulAdd(pj, vv[a], acc[qi][a]);
    }
  });
  for (int qi = 0; qi < Q; ++qi)
    for (int a = 0; a < NV; ++a) hn::StoreU(acc[qi][a], d, out[qi] + i0 + a * N);
}

// weighted_values with NV in {1, 2, 4, 8} chosen at run time.
template <bool kF16, int Q>
void weighted_values_n(int nv, const PagedKvLayer& v, const int32_t* block_table, int64_t j_begin, int64_t j_end,
                       int kvh, const float* const* p, int64_t i0, float* const* out, bool start) {
  switch (nv) {
    case 1: return weighted_values<kF16, Q, 1>(v, block_table, j_begin, j_end, kvh, p, i0, out, start);
    case 2: return weighted_values<kF16, Q, 2>(v, block_table, j_begin, j_end, kvh, p, i0, out, start);
    case 4: return weighted_values<kF16, Q, 4>(v, block_table, j_begin, j_end, kvh, p, i0, out, start);
    default: return weighted_values<kF16, Q, 8>(v, block_table, j_begin, j_end, kvh, p, i0, out, start);
  }
}

// A float format's dim-major keys of one KV head, in place ([head_dim][bs]).
template <bool kF16>
struct StoredKeys {
  const uint8_t* p;
  int64_t bs;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t i, int64_t l0) const {
    return load_kv<kF16>(d, p, i * bs + l0);
  }
};

// Scores of Q queries against the first n keys of one dim-major K block of
// one KV head, lane l of a vector being key l (key(d, i, l0): dim i of keys
// l0 .. l0 + Lanes(d), kv_decode-inl.h). Every lane of every query runs the
// same chain, four partial sums over the dims i = m (mod 4) in increasing
// i, then ((c0 + c1) + (c2 + c3)) * scale: a key's score depends on the
// query and the key alone. Writes whole vectors (up to the block's end, past
// n), so each s[q] must have room for them.
template <int Q, class D, class Keys>
HWY_INLINE void block_scores(D d, const float* const* q, const Keys& key, int64_t hd, int64_t n, float scale,
                             float* const* s) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t l0 = 0; l0 < n; l0 += N) {
    hn::Vec<D> c[Q][4];
    for (int qi = 0; qi < Q; ++qi)
      for (int m = 0; m < 4; ++m) c[qi][m] = hn::Zero(d);
    int64_t i = 0;
    for (; i + 4 <= hd; i += 4) {
      for (int m = 0; m < 4; ++m) {
        const auto kv = key(d, i + m, l0);
        for (int qi = 0; qi < Q; ++qi) c[qi][m] = hn::MulAdd(hn::Set(d, q[qi][i + m]), kv, c[qi][m]);
      }
    }
    for (int m = 0; i + m < hd; ++m) {  // head_dim % 4 dims, each into its own chain
      const auto kv = key(d, i + m, l0);
      for (int qi = 0; qi < Q; ++qi) c[qi][m] = hn::MulAdd(hn::Set(d, q[qi][i + m]), kv, c[qi][m]);
    }
    for (int qi = 0; qi < Q; ++qi) {
      const auto sum = hn::Add(hn::Add(c[qi][0], c[qi][1]), hn::Add(c[qi][2], c[qi][3]));
      hn::StoreU(hn::Mul(sum, hn::Set(d, scale)), d, s[qi] + l0);
    }
  }
}

// s[q][j] for keys j in [0, n_keys) of KV head kvh; each s[q] has room for
// whole blocks. The keys of an evicted block, and of the blocks before j_lo
// (a multiple of the block size: outside every query's window), score -inf
// (weight 0). D's lane count divides the block size.
template <bool kF16, int Q, class D>
HWY_INLINE void query_scores(D d, const float* const* q, int64_t j_lo, int64_t n_keys, int kvh,
                             const PagedKvLayer& k, const int32_t* block_table, float scale, float* const* s) {
  const size_t elem = kF16 ? 2 : 4;
  const int64_t bs = k.block_size, hd = k.head_dim;
  const size_t head_offset = static_cast<size_t>(kvh) * static_cast<size_t>(hd * bs) * elem;
  for (int64_t j0 = 0, b = 0; j0 < n_keys; j0 += bs, ++b) {
    if (j0 < j_lo || block_table[b] < 0) {
      for (int qi = 0; qi < Q; ++qi) std::fill_n(s[qi] + j0, bs, -INFINITY);
      continue;
    }
    const uint8_t* kb = k.base + static_cast<size_t>(block_table[b]) * k.block_stride_bytes + head_offset;
    float* sb[Q];
    for (int qi = 0; qi < Q; ++qi) sb[qi] = s[qi] + j0;
    block_scores<Q>(d, q, StoredKeys<kF16>{kb, bs}, hd, std::min(bs, n_keys - j0), scale, sb);
  }
}

// query_scores with the widest vectors whose lane count divides the block
// size (the choice depends on the layout alone, never on the batch).
template <bool kF16, int Q>
void all_scores(const float* const* q, int64_t j_lo, int64_t n_keys, int kvh, const PagedKvLayer& k,
                const int32_t* block_table, float scale, float* const* s) {
  const DF df;
  const int64_t bs = k.block_size;
  if (bs % static_cast<int64_t>(hn::Lanes(df)) == 0) {
    query_scores<kF16, Q>(df, q, j_lo, n_keys, kvh, k, block_table, scale, s);
  } else if (bs % 8 == 0) {
    query_scores<kF16, Q>(hn::CappedTag<float, 8>(), q, j_lo, n_keys, kvh, k, block_table, scale, s);
  } else if (bs % 4 == 0) {
    query_scores<kF16, Q>(hn::CappedTag<float, 4>(), q, j_lo, n_keys, kvh, k, block_table, scale, s);
  } else {
    query_scores<kF16, Q>(hn::CappedTag<float, 1>(), q, j_lo, n_keys, kvh, k, block_table, scale, s);
  }
}

// The keys of one query's window and how its scores are shaped: it sees keys
// [first, n_keys); keys [j_lo, first) were scored for other queries of its
// tile and become -inf here (keys before j_lo already are). A soft cap maps
// every other score x to softcap * tanh(x / softcap), a whole vector at a
// time (the last one through a copy), so a key's capped score is the same
// whichever keys share its vector. -inf (evicted) stays -inf.
HWY_INLINE void shape_scores(float* s, int64_t j_lo, int64_t first, int64_t n_keys, float softcap) {
  std::fill(s + j_lo, s + first, -INFINITY);
  if (softcap <= 0.0f) return;
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto cap = hn::Set(d, softcap);
  const auto inv = hn::Set(d, 1.0f / softcap);
  const auto ninf = hn::Set(d, -INFINITY);
  auto cap_at = [&](float* p) {
    const auto x = hn::LoadU(d, p);
    const auto y = hn::Mul(cap, hn::CallTanh(d, hn::Mul(x, inv)));
    hn::StoreU(hn::IfThenElse(hn::Eq(x, ninf), x, y), d, p);
  };
  int64_t j = first;
  for (; j + N <= n_keys; j += N) cap_at(s + j);
  if (j < n_keys) {
    HWY_ALIGN float tail[hn::MaxLanes(d)] = {};
    std::copy(s + j, s + n_keys, tail);
    cap_at(tail);
    std::copy(tail, tail + (n_keys - j), s + j);
  }
}

// Turns scores[0, n_keys) into exp(score - max) in place; returns their sum.
// Scores of -inf (evicted keys) become 0: Highway's Exp is 0 below -104, so
// clamping its argument at -105 changes no result and keeps -inf out of it.
HWY_INLINE float exponentials(float* scores, int64_t n_keys) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  // The maximum is exact whatever the order, so it may be taken in vectors.
  auto vmax = hn::Set(d, -INFINITY);
  int64_t jm = 0;
  for (; jm + N <= n_keys; jm += N) vmax = hn::Max(vmax, hn::LoadU(d, scores + jm));
  float mx = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (; jm < n_keys; ++jm) mx = std::max(mx, scores[jm]);
  const auto vm = hn::Set(d, mx);
  const auto floor = hn::Set(d, -105.0f);  // below Highway's Exp range (-104): exp is 0
  auto vsum = hn::Zero(d);
  int64_t j = 0;
  for (; j + N <= n_keys; j += N) {
    const auto e = hn::CallExp(d, hn::Max(hn::Sub(hn::LoadU(d, scores + j), vm), floor));
    hn::StoreU(e, d, scores + j);
    vsum = hn::Add(vsum, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, vsum));
  for (; j < n_keys; ++j) {
    scores[j] = std::exp(scores[j] - mx);
    sum += scores[j];
  }
  return sum;
}

// Per-thread buffers of one tile: its queries' scores, and the per-block
// parts of a quantized format that the readers of kv_decode-inl.h widen once
// per block: a staged K block widened to floats ([head_dim][block_size],
// through an f16 transpose), Q4 key codes one per byte, and scales and mins.
struct TileScratch {
  std::vector<float> scores[kQueryTile];
  std::vector<std::vector<float>> quant_scores;  // [queries of a quantized-format tile]
  std::vector<float> k_block;
  std::vector<uint16_t> k_staged;
  std::vector<uint8_t> k_codes;
  std::vector<float> k_params;
  std::vector<float> v_params;
  std::vector<float> v_block;  // a Q4 V block of a shape whose vectors straddle groups
};

// out[q][head_dim] = softmax(scale * q.K^T) V over positions [first[q],
// n_keys[q]) for Q queries of one sequence and KV head. Scores come one key per lane
// from the dim-major K blocks, keys up to the longest query for all of them
// (the extra scores of a shorter query are never read); values stream once
// for the keys every query sees, then per query for the rest, continuing
// the same chains. Each query's arithmetic is fixed by its key positions.
template <bool kF16, int Q>
void attend_tile(const float* const* q, const int64_t* first, const int64_t* n_keys, int kvh,
                 const PagedKvLayer& k, const PagedKvLayer& v, const int32_t* block_table, float scale,
                 float softcap, float* const* out, TileScratch& scratch) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t hd = k.head_dim, bs = k.block_size;
  const int64_t n_hi = *std::max_element(n_keys, n_keys + Q);
  const int64_t n_lo = *std::min_element(n_keys, n_keys + Q);
  // The first block any of the queries sees (a zero weight adds nothing to
  // a chain, so the tile's queries may start there together).
  const int64_t j_lo = *std::min_element(first, first + Q) / bs * bs;
  float* s[Q];
  for (int qi = 0; qi < Q; ++qi) {
    scratch.scores[qi].resize(static_cast<size_t>((n_hi + bs - 1) / bs * bs));
    s[qi] = scratch.scores[qi].data();
  }
  all_scores<kF16, Q>(q, j_lo, n_hi, kvh, k, block_table, scale, s);
  float sum[Q];
  for (int qi = 0; qi < Q; ++qi) {
    shape_scores(s[qi], j_lo, first[qi], n_keys[qi], softcap);
    sum[qi] = exponentials(s[qi], n_keys[qi]);
  }

  constexpr int kMaxNv = std::min(8, kAccRegs / Q);
  const float* const* p = s;
  int64_t i = 0;
  while (i + N <= hd) {
    int nv = 1;
    while (nv * 2 <= kMaxNv && i + nv * 2 * N <= hd) nv *= 2;
    weighted_values_n<kF16, Q>(nv, v, block_table, j_lo, n_lo, kvh, p, i, out, true);
    for (int qi = 0; qi < Q; ++qi) {
      if (n_keys[qi] > n_lo) {
        weighted_values_n<kF16, 1>(nv, v, block_table, n_lo, n_keys[qi], kvh, &p[qi], i, &out[qi], false);
      }
    }
    i += nv * N;
  }
  for (int qi = 0; qi < Q; ++qi) {
    for (int64_t e = i; e < hd; ++e) {
      float acc = 0.0f;
      for_each_key(v, block_table, j_lo, n_keys[qi], kvh, [&](int64_t j, const uint8_t* vp) {
        acc += s[qi][j] * kv_scalar<kF16>(vp, e);
      });
      out[qi][e] = acc;
    }
    const float inv = 1.0f / sum[qi];
    for (int64_t e = 0; e < hd; ++e) out[qi][e] *= inv;
  }
}

// For Q queries, continues out[q][i] += sum over rows r < n of p[q][r] *
// V[r][i] for NV vectors of dims from i0 (or starts from zero), the rows
// being one V block read by `rows` (kv_decode-inl.h). Each lane of each
// query is the chain acc = fma(p_r, v_r, acc) in key order, whatever the
// tiling, however many rows a call gets and whichever dims share a pass.
template <int Q, int NV, class Rows>
HWY_INLINE void accumulate_rows(const Rows& rows, int64_t n, const float* const* p, int64_t i0, float* const* out,
                                bool start) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  hn::Vec<DF> acc[Q][NV];
  for (int qi = 0; qi < Q; ++qi)
    for (int a = 0; a < NV; ++a) acc[qi][a] = start ? hn::Zero(d) : hn::LoadU(d, out[qi] + i0 + a * N);
  decltype(rows.col(0)) col[NV];
  for (int a = 0; a < NV; ++a) col[a] = rows.col(i0 + a * N);
  for (int64_t r = 0; r < n; ++r) {
    hn::Vec<DF> vv[NV];
    for (int a = 0; a < NV; ++a) vv[a] = rows.load(d, r, col[a]);
    for (int qi = 0; qi < Q; ++qi) {
      const auto pj = hn::Set(d, p[qi][r]);
      for (int a = 0; a < NV; ++a) acc[qi][a] = hn::MulAdd(pj, vv[a], acc[qi][a]);
    }
  }
  for (int qi = 0; qi < Q; ++qi)
    for (int a = 0; a < NV; ++a) hn::StoreU(acc[qi][a], d, out[qi] + i0 + a * N);
}

// accumulate_rows over dims [begin, end) in passes of up to kAccRegs / Q
// vectors; the dims past the last whole vector as scalar chains acc += p_r *
// v_r.
template <int Q, class Rows>
void accumulate_block(const Rows& rows, int64_t begin, int64_t end, int64_t n, const float* const* p,
                      float* const* out, bool start) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  constexpr int kMaxNv = std::min(8, kAccRegs / Q);
  int64_t i = begin;
  while (i + N <= end) {
    int nv = 1;
    while (nv * 2 <= kMaxNv && i + nv * 2 * N <= end) nv *= 2;
    switch (nv) {
      case 1: accumulate_rows<Q, 1>(rows, n, p, i, out, start); break;
      case 2: accumulate_rows<Q, 2>(rows, n, p, i, out, start); break;
      case 4: accumulate_rows<Q, 4>(rows, n, p, i, out, start); break;
      default: accumulate_rows<Q, 8>(rows, n, p, i, out, start); break;
    }
    i += nv * N;
  }
  for (int qi = 0; qi < Q; ++qi) {
    for (int64_t e = i; e < end; ++e) {
      float acc = start ? 0.0f : out[qi][e];
      for (int64_t r = 0; r < n; ++r) acc += p[qi][r] * rows.elem(r, e);
      out[qi][e] = acc;
    }
  }
}

// Runs fn(key) with the reader of the keys of KV head kvh in a quantized
// block (kv_decode-inl.h); staged: from the block's F16 staging slot.
template <class Fn>
HWY_INLINE void with_quant_keys(const PagedKvLayer& k, int32_t block_id, int kvh, bool staged,
                                TileScratch& scratch, Fn&& fn) {
  if (staged) {
    widen_staged_keys(k, block_id, kvh, scratch.k_staged.data(), scratch.k_block.data());
    fn(FloatKeys{scratch.k_block.data(), k.block_size});
  } else if (k.dtype == TensorType::kQ8_0) {
    fn(q8_keys(k, block_id, kvh, scratch.k_params.data()));
  } else {
    fn(q4_keys(k, block_id, kvh, scratch.k_codes.data(), scratch.k_params.data()));
  }
}

// Attention for the quantized formats (Q8, Q4) over nq <= kQuantTileQueries
// queries of one sequence and KV head: block by block, each K and V block's
// scales (and Q4 key codes) are widened once for all of them, and the same
// score and weighted-sum chains as the float formats read the codes in
// place, kQueryTile queries at a time. A Q4 block that holds positions past a query is read from its F16 staging
// slot instead; queries that see a block only in part take it one at a
// time. Evicted blocks (table entry < 0) and blocks before every query's
// window are skipped. Each query's arithmetic is fixed by its key positions
// alone.
void attend_quant(const float* const* q, const int64_t* first, const int64_t* n_keys, int nq, int kvh,
                  const PagedKvLayer& k, const PagedKvLayer& v, const int32_t* block_table, float scale,
                  float softcap, float* const* out, TileScratch& scratch) {
  const int64_t hd = k.head_dim, bs = k.block_size;
  const bool staged_format = kv_dtype_staged(k.dtype);
  const int64_t n_hi = *std::max_element(n_keys, n_keys + nq);
  const int64_t n_blocks = (n_hi + bs - 1) / bs;
  const int64_t b_lo = *std::min_element(first, first + nq) / bs;  // the first block a query sees
  if (scratch.quant_scores.size() < static_cast<size_t>(nq)) {
    scratch.quant_scores.resize(static_cast<size_t>(nq));
  }
  float* s[detail::kQuantTileQueries];
  for (int qi = 0; qi < nq; ++qi) {
    scratch.quant_scores[static_cast<size_t>(qi)].resize(static_cast<size_t>(n_blocks * bs));
    s[qi] = scratch.quant_scores[static_cast<size_t>(qi)].data();
  }
  const auto block_elems = static_cast<size_t>(hd * bs);
  if (staged_format) {
    scratch.k_block.resize(block_elems);
    scratch.k_staged.resize(block_elems);
    scratch.k_codes.resize(block_elems);
    scratch.v_block.resize(block_elems);
  }
  const int64_t groups = hd / kv_channel_group(k.head_dim);  // Q8 scales per token and head
  scratch.k_params.resize(static_cast<size_t>(std::max(bs * groups, 2 * hd)));
  scratch.v_params.resize(static_cast<size_t>(bs * std::max<int64_t>(k.n_kv_heads * groups, hd)));
  // Runs fn(staged, whole, partial, n_whole, n_partial) for each way of
  // reading block b: the queries that see all of its positions and those
  // that see only some.
  auto for_each_mode = [&](int64_t b, auto&& fn) {
    const int64_t j0 = b * bs;
    for (int mode = 0; mode < 2; ++mode) {
      int whole[detail::kQuantTileQueries], partial[detail::kQuantTileQueries];
      int n_whole = 0, n_partial = 0;
      for (int qi = 0; qi < nq; ++qi) {
        if (n_keys[qi] <= j0) continue;
        const bool staged = staged_format && j0 + bs > n_keys[qi];
        if (staged != (mode == 1)) continue;
        if (n_keys[qi] >= j0 + bs) {
          whole[n_whole++] = qi;
        } else {
          partial[n_partial++] = qi;
        }
      }
      if (n_whole + n_partial > 0) fn(mode == 1, whole, partial, n_whole, n_partial);
    }
  };
  int64_t b_first = -1;  // the first kept block: every query sees it, and its sums start the chains
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int64_t j0 = b * bs;
    if (b < b_lo || block_table[b] < 0) {  // evicted or outside the windows: its keys score -inf (weight 0)
      for (int qi = 0; qi < nq; ++qi) {
        if (n_keys[qi] > j0) std::fill_n(s[qi] + j0, bs, -INFINITY);
      }
      continue;
    }
    if (b_first < 0) b_first = b;
    if (b + 1 < n_blocks && block_table[b + 1] >= 0) prefetch_quant_block(k, block_table[b + 1], kvh);
    for_each_mode(b, [&](bool staged, const int* whole, const int* partial, int n_whole, int n_partial) {
      with_quant_keys(k, block_table[b], kvh, staged, scratch, [&](const auto& key) {
        with_lanes_dividing(bs, [&](auto d) {
          int w = 0;
          for (; w + kQueryTile <= n_whole; w += kQueryTile) {
            const float* qs[kQueryTile];
            float* sb[kQueryTile];
            for (int t = 0; t < kQueryTile; ++t) {
              qs[t] = q[whole[w + t]];
              sb[t] = s[whole[w + t]] + j0;
            }
            block_scores<kQueryTile>(d, qs, key, hd, bs, scale, sb);
          }
          auto one = [&](int qi) {
            float* sb = s[qi] + j0;
            block_scores<1>(d, &q[qi], key, hd, std::min(bs, n_keys[qi] - j0), scale, &sb);
          };
          for (; w < n_whole; ++w) one(whole[w]);
          for (int m = 0; m < n_partial; ++m) one(partial[m]);
        });
      });
    });
  }
  float sum[detail::kQuantTileQueries];
  for (int qi = 0; qi < nq; ++qi) {
    shape_scores(s[qi], b_lo * bs, first[qi], n_keys[qi], softcap);
    sum[qi] = exponentials(s[qi], n_keys[qi]);
  }
  for (int64_t b = b_lo; b < n_blocks; ++b) {
    const int64_t j0 = b * bs;
    if (block_table[b] < 0) continue;
    if (b + 1 < n_blocks && block_table[b + 1] >= 0) prefetch_quant_block(v, block_table[b + 1], kvh);
    for_each_mode(b, [&](bool staged, const int* whole, const int* partial, int n_whole, int n_partial) {
      int64_t rows = n_whole > 0 ? bs : 0;
      for (int m = 0; m < n_partial; ++m) rows = std::max(rows, n_keys[partial[m]] - j0);
      with_value_rows(v, block_table[b], kvh, rows, staged, scratch.v_params.data(), scratch.v_block.data(),
                      [&](const auto& vr, int64_t begin, int64_t end) {
                        int w = 0;
                        for (; w + kQueryTile <= n_whole; w += kQueryTile) {
                          const float* p[kQueryTile];
                          float* o[kQueryTile];
                          for (int t = 0; t < kQueryTile; ++t) {
                            p[t] = s[whole[w + t]] + j0;
                            o[t] = out[whole[w + t]];
                          }
                          accumulate_block<kQueryTile>(vr, begin, end, bs, p, o, b == b_first);
                        }
                        auto one = [&](int qi) {
                          const float* p = s[qi] + j0;
                          accumulate_block<1>(vr, begin, end, std::min(bs, n_keys[qi] - j0), &p, &out[qi],
                                              b == b_first);
                        };
                        for (; w < n_whole; ++w) one(whole[w]);
                        for (int m = 0; m < n_partial; ++m) one(partial[m]);
                      });
    });
  }
  for (int qi = 0; qi < nq; ++qi) {
    const float inv = 1.0f / sum[qi];
    for (int64_t e = 0; e < hd; ++e) out[qi][e] *= inv;
  }
}

// Exported: queries per tile on this target (at least 2).
int64_t AttentionQueryTile() {
  return kQueryTile;
}

// attend_tile for Q queries of the right dtype.
template <int Q>
HWY_INLINE void attend_tile_any(const float* const* q, const int64_t* first, const int64_t* n_keys, int kvh,
                                const PagedKvLayer& k, const PagedKvLayer& v, const int32_t* block_table,
                                float scale, float softcap, float* const* out, TileScratch& scratch) {
  if (k.dtype == TensorType::kF16) {
    attend_tile<true, Q>(q, first, n_keys, kvh, k, v, block_table, scale, softcap, out, scratch);
  } else {
    attend_tile<false, Q>(q, first, n_keys, kvh, k, v, block_table, scale, softcap, out, scratch);
  }
}

// mass[b] += the normalized weights of block b's keys, for each of n
// queries whose exp(score - max) over keys [0, n_keys[q]) weights(q) holds.
template <class Weights>
void add_key_mass(const Weights& weights, const int64_t* n_keys, int64_t n, int64_t bs, float* mass) {
  for (int64_t qi = 0; qi < n; ++qi) {
    const float* w = weights(qi);
    double total = 0;
    for (int64_t j = 0; j < n_keys[qi]; ++j) total += w[j];
    const double inv = 1.0 / total;
    for (int64_t j0 = 0, b = 0; j0 < n_keys[qi]; j0 += bs, ++b) {
      double block = 0;
      for (int64_t j = j0; j < std::min(j0 + bs, n_keys[qi]); ++j) block += w[j];
      mass[b] += static_cast<float>(block * inv);
    }
  }
}

// Tiles [begin, end). A tile's queries are its rows x its heads (heads of one
// KV head, so they share every K and V load: a decode row's GQA group, or a
// prefill chunk's consecutive rows). One query runs alone; two as a pair;
// more are padded to kQueryTile with copies of the last query whose results
// are dropped.
void AttentionTasks(const detail::AttentionArgs& a, int64_t begin, int64_t end) {
  thread_local TileScratch scratch;
  thread_local std::vector<float> dropped;
  const int group = a.n_heads / a.k->n_kv_heads;
  const int64_t hd = a.k->head_dim;
  const bool quantized = kv_dtype_quantized(a.k->dtype);
  dropped.resize(static_cast<size_t>(hd));
  for (int64_t task = begin; task < end; ++task) {
    const detail::AttentionTile& tile = a.tiles[task];
    const int64_t n_real = tile.n_rows * tile.n_heads;
    // Quantized formats take a tile's queries as they are (up to
    // kQuantTileQueries, decoding each block once for all); float formats
    // pad a tile of more than two to kQueryTile.
    const int64_t n_slots = quantized ? n_real : kQueryTile;
    const float* q[detail::kQuantTileQueries];
    float* out[detail::kQuantTileQueries];
    int64_t n_keys[detail::kQuantTileQueries];
    int64_t first[detail::kQuantTileQueries];  // each query's first visible key
    for (int64_t qi = 0; qi < n_slots; ++qi) {
      const int64_t i = std::min(qi, n_real - 1);
      const int64_t row = tile.row0 + i / tile.n_heads;
      const int64_t h = tile.head0 + i % tile.n_heads;
      q[qi] = a.q + (row * a.n_heads + h) * hd;
      out[qi] = qi < n_real ? a.out + (row * a.n_heads + h) * hd : dropped.data();
      n_keys[qi] = static_cast<int64_t>(a.q_pos[row]) + 1;
      first[qi] = a.scoring.window > 0 ? std::max<int64_t>(0, n_keys[qi] - a.scoring.window) : 0;
    }
    const int kvh = static_cast<int>(tile.head0 / group);
    // The kernels leave each real query's exp(score - max) in scratch (0 for
    // evicted keys) for the tile's key mass.
    auto weights = [&](int64_t qi) {
      return quantized ? scratch.quant_scores[static_cast<size_t>(qi)].data()
                       : scratch.scores[static_cast<size_t>(qi)].data();
    };
    const float cap = a.scoring.softcap;
    if (quantized) {
      attend_quant(q, first, n_keys, static_cast<int>(n_real), kvh, *a.k, *a.v, tile.block_table, a.scale, cap,
                   out, scratch);
    } else if (n_real == 1) {
      attend_tile_any<1>(q, first, n_keys, kvh, *a.k, *a.v, tile.block_table, a.scale, cap, out, scratch);
    } else if (n_real == 2) {
      attend_tile_any<2>(q, first, n_keys, kvh, *a.k, *a.v, tile.block_table, a.scale, cap, out, scratch);
    } else {
      attend_tile_any<kQueryTile>(q, first, n_keys, kvh, *a.k, *a.v, tile.block_table, a.scale, cap, out,
                                  scratch);
    }
    if (tile.mass != nullptr) add_key_mass(weights, n_keys, n_real, a.k->block_size, tile.mass);
  }
}

void KvStore(const PagedKvLayer& layer, const int32_t* block_table, int64_t pos, const float* vec) {
  const int64_t n = static_cast<int64_t>(layer.n_kv_heads) * layer.head_dim;
  const int64_t block = block_table[pos / layer.block_size];
  const int64_t slot = pos % layer.block_size;
  uint8_t* dst = layer.base + static_cast<size_t>(block) * layer.block_stride_bytes;
  if (layer.layout == KvLayout::kDimMajor) {
    // Element e of the token goes to [e][slot] (e = head * head_dim + dim).
    const int64_t bs = layer.block_size;
    if (layer.dtype == TensorType::kF16) {
      uint16_t* h = reinterpret_cast<uint16_t*>(dst) + slot;
      for (int64_t e = 0; e < n; ++e) h[e * bs] = f32_to_f16(vec[e]);
    } else {
      float* f = reinterpret_cast<float*>(dst) + slot;
      for (int64_t e = 0; e < n; ++e) f[e * bs] = vec[e];
    }
    return;
  }
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
