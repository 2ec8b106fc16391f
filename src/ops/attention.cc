// Paged attention and KV store: dispatch to attention-inl.h, argument checks,
// and the scalar reference.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "ops/attention-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/check.h"
#include "common/half.h"
#include "ops/attention.h"
#include "ops/attention_internal.h"
#include "ops/kv_codec.h"

namespace ladder::ops {

HWY_EXPORT(AttentionTasks);
HWY_EXPORT(AttentionQueryTile);
HWY_EXPORT(KvStore);

namespace {

void check_layer(const PagedKvLayer& l) {
  LADDER_CHECK(l.base != nullptr && l.block_size > 0 && l.n_kv_heads > 0 && l.head_dim > 0,
               "attention: incomplete PagedKvLayer");
  LADDER_CHECK(kv_shape_problem(l.dtype, l.block_size, l.head_dim) == nullptr,
               "attention: the KV format does not fit the layer");
  LADDER_CHECK(!kv_dtype_staged(l.dtype) || (l.staging != nullptr && l.staging_slot != nullptr),
               "attention: a staged KV format without staging slots");
}

void check_pair(const PagedKvLayer& k, const PagedKvLayer& v, int n_heads) {
  check_layer(k);
  check_layer(v);
  LADDER_CHECK(k.n_kv_heads == v.n_kv_heads && k.head_dim == v.head_dim && k.block_size == v.block_size,
               "attention: K and V layouts differ");
  LADDER_CHECK(k.layout == KvLayout::kDimMajor && v.layout == KvLayout::kTokenMajor,
               "attention: K must be stored dim-major and V token-major");
  LADDER_CHECK(n_heads > 0 && n_heads % k.n_kv_heads == 0,
               "attention: n_heads must be a multiple of n_kv_heads");
}

}  // namespace

void kv_store(const PagedKvLayer& layer, const int32_t* block_table, int64_t pos, const float* vec) {
  check_layer(layer);
  LADDER_CHECK(pos >= 0, "kv_store: negative position");
  const int64_t block = block_table[pos / layer.block_size];
  LADDER_CHECK(block >= 0, "kv_store: the position's block was evicted");
  const int64_t slot = pos % layer.block_size;
  if (layer.dtype == TensorType::kQ8_0) {
    kv_encode_token_q8(layer, layer.base + static_cast<size_t>(block) * layer.block_stride_bytes, slot, vec);
  } else if (layer.dtype == TensorType::kQ4_0) {
    kv_encode_token_staged(layer, static_cast<int32_t>(block), slot, vec);
  } else {
    HWY_DYNAMIC_DISPATCH(KvStore)(layer, block_table, pos, vec);
  }
}

void kv_seal(const PagedKvLayer& layer, const int32_t* block_table, int64_t pos) {
  if (!kv_dtype_staged(layer.dtype) || (pos + 1) % layer.block_size != 0) return;
  check_layer(layer);
  kv_seal_block_q4(layer, block_table[pos / layer.block_size]);
}

void attention_batch(const float* q, const int32_t* q_pos, std::span<const AttentionSeq> seqs, int n_heads,
                     const PagedKvLayer& k, const PagedKvLayer& v, float scale, float* out, ThreadPool& pool,
                     AttentionScoring scoring) {
  check_pair(k, v, n_heads);
  LADDER_CHECK(scoring.window >= 0 && scoring.softcap >= 0.0f && std::isfinite(scoring.softcap),
               "attention: negative window or soft cap");
  // Tiles of queries sharing a KV head: a GQA group's heads first (a decode
  // row's heads share K and V), then consecutive rows of a prefill chunk.
  const bool quantized = k.dtype == TensorType::kQ8_0 || k.dtype == TensorType::kQ4_0;
  const int64_t width = quantized ? detail::kQuantTileQueries : HWY_DYNAMIC_DISPATCH(AttentionQueryTile)();
  const int64_t group = n_heads / k.n_kv_heads;
  int64_t tile_heads = std::min(group, width);
  int64_t tile_rows = width / tile_heads;
  // Enough tiles to keep every thread busy (a single decode row has only
  // n_heads / tile_heads of them): narrower head tiles when there are few.
  auto count_tiles = [&] {
    int64_t n = 0;
    for (const AttentionSeq& s : seqs) n += (s.n_rows + tile_rows - 1) / tile_rows;
    return n * k.n_kv_heads * ((group + tile_heads - 1) / tile_heads);
  };
  while (tile_heads > 1 && count_tiles() < 2 * static_cast<int64_t>(pool.size())) {
    tile_heads /= 2;
    tile_rows = width / tile_heads;
  }
  // A quantized format's wide tiles give a short prefill chunk few tasks:
  // fewer rows per tile then (tiling never changes a result).
  while (quantized && tile_rows > 1 && count_tiles() < 2 * static_cast<int64_t>(pool.size())) tile_rows /= 2;
  thread_local std::vector<detail::AttentionTile> tiles;
  thread_local std::vector<float> tile_mass;  // every mass-asking tile's sums, back to back
  tiles.clear();
  int64_t rows = 0, mass_size = 0;
  for (size_t si = 0; si < seqs.size(); ++si) {
    const AttentionSeq& s = seqs[si];
    LADDER_CHECK(s.n_rows >= 0 && s.row0 == rows, "attention: sequences must cover consecutive rows");
    LADDER_CHECK(s.n_rows == 0 || s.block_table != nullptr, "attention: sequence without a block table");
    for (int64_t i = s.row0; i < s.row0 + s.n_rows; ++i) {
      LADDER_CHECK(q_pos[i] >= 0, "attention: negative query position");
    }
    int64_t n_mass = 0;
    if (s.key_mass != nullptr && s.n_rows > 0) {
      n_mass = *std::max_element(q_pos + s.row0, q_pos + s.row0 + s.n_rows) / k.block_size + 1;
    }
    for (int64_t r = 0; r < s.n_rows; r += tile_rows) {
      for (int64_t h = 0; h < n_heads;) {
        // A chunk of heads never crosses a KV head's group.
        const int64_t nh = std::min(tile_heads, (h / group + 1) * group - h);
        tiles.push_back({s.row0 + r, std::min(tile_rows, s.n_rows - r), h, nh, s.block_table, nullptr, n_mass,
                         static_cast<int64_t>(si)});
        mass_size += n_mass;
        h += nh;
      }
    }
    rows += s.n_rows;
  }
  tile_mass.assign(static_cast<size_t>(mass_size), 0.0f);
  for (int64_t t = 0, offset = 0; t < static_cast<int64_t>(tiles.size()); ++t) {
    if (tiles[t].n_mass_blocks == 0) continue;
    tiles[t].mass = tile_mass.data() + offset;
    offset += tiles[t].n_mass_blocks;
  }
  detail::AttentionArgs a;
  a.q = q;
  a.q_pos = q_pos;
  a.tiles = tiles.data();
  a.n_heads = n_heads;
  a.k = &k;
  a.v = &v;
  a.scale = scale;
  a.scoring = scoring;
  a.out = out;
  const auto fn = HWY_DYNAMIC_DISPATCH(AttentionTasks);
  pool.parallel_for(static_cast<int64_t>(tiles.size()), 1, [&](int64_t b, int64_t e) { fn(a, b, e); });
  for (const detail::AttentionTile& t : tiles) {  // in tile order: the sums do not depend on threads
    if (t.mass == nullptr) continue;
    float* dst = seqs[static_cast<size_t>(t.seq)].key_mass;
    for (int64_t b = 0; b < t.n_mass_blocks; ++b) dst[b] += t.mass[b];
  }
}

void attention(const float* q, int64_t n_q, const int32_t* q_pos, int n_heads, const PagedKvLayer& k,
               const PagedKvLayer& v, const int32_t* block_table, float scale, float* out, ThreadPool& pool,
               AttentionScoring scoring) {
  const AttentionSeq seq{0, n_q, block_table};
  attention_batch(q, q_pos, {&seq, 1}, n_heads, k, v, scale, out, pool, scoring);
}

void attention_reference(const float* q, int64_t n_q, const int32_t* q_pos, int n_heads,
                         const PagedKvLayer& k, const PagedKvLayer& v, const int32_t* block_table,
                         float scale, float* out, AttentionScoring scoring) {
  check_pair(k, v, n_heads);
  const int hd = k.head_dim;
  const int group = n_heads / k.n_kv_heads;
  for (int64_t qi = 0; qi < n_q; ++qi) {
    const int64_t n_keys = static_cast<int64_t>(q_pos[qi]) + 1;
    for (int h = 0; h < n_heads; ++h) {
      const float* qv = q + (qi * n_heads + h) * hd;
      const int kvh = h / group;
      std::vector<double> s(static_cast<size_t>(n_keys));
      double mx = -INFINITY;
      const int64_t first = scoring.window > 0 ? std::max<int64_t>(0, n_keys - scoring.window) : 0;
      auto evicted = [&](int64_t j) { return j < first || block_table[j / k.block_size] < 0; };
      for (int64_t j = 0; j < n_keys; ++j) {
        if (evicted(j)) {
          s[j] = -INFINITY;
          continue;
        }
        double dot = 0.0;
        for (int i = 0; i < hd; ++i) {
          dot += static_cast<double>(qv[i]) * kv_decode_elem(k, block_table, j, kvh, i, n_keys);
        }
        s[j] = dot * scale;
        if (scoring.softcap > 0.0f) s[j] = scoring.softcap * std::tanh(s[j] / scoring.softcap);
        mx = std::max(mx, s[j]);
      }
      double sum = 0.0;
      for (auto& x : s) sum += x = std::exp(x - mx);
      for (int i = 0; i < hd; ++i) {
        double acc = 0.0;
        for (int64_t j = 0; j < n_keys; ++j) {
          if (!evicted(j)) acc += s[j] * kv_decode_elem(v, block_table, j, kvh, i, n_keys);
        }
        out[(qi * n_heads + h) * hd + i] = static_cast<float>(acc / sum);
      }
    }
  }
}

}  // namespace ladder::ops
#endif  // HWY_ONCE
