// Attention over a gapped block table (KV eviction, kv/kv_eviction.h):
// entries < 0 are evicted blocks. Checked against a scalar reference written
// here from the raw vectors -- keys and queries rotated (RoPE) at their
// ORIGINAL positions, attending only over the kept positions <= the query's
// -- in every KV format, and bit-identical however queries are batched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "common/half.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/kv_codec.h"
#include "ops_test_util.h"

namespace ladder::ops {
namespace {

using testing::expect_attention_matches_and_invariant;
using testing::PagedStore;
using testing::random_floats;

// 100 positions: 7 blocks of 16, the last partly filled.
constexpr int kHeads = 4, kKvHeads = 2, kHeadDim = 64, kBlock = 16, kTokens = 100;
constexpr int kKvDim = kKvHeads * kHeadDim, kQDim = kHeads * kHeadDim;

PagedStore make_store(TensorType dtype, int n_blocks, KvLayout layout) {
  return testing::make_store(dtype, n_blocks, kBlock, kKvHeads, kHeadDim, layout);
}

std::vector<float> inv_freq() {
  std::vector<float> f(kHeadDim / 2);
  for (int i = 0; i < kHeadDim / 2; ++i) f[i] = std::pow(10000.0f, -2.0f * i / kHeadDim);
  return f;
}

// The model's data: keys and queries rotated at their original positions.
struct Data {
  std::vector<float> k, v, q;  // [kTokens][kKvDim], [kTokens][kKvDim], [kTokens][kQDim]
};

Data make_data() {
  Data d;
  d.k = random_floats(static_cast<size_t>(kTokens * kKvDim), 11, -2.0f, 2.0f);
  d.v = random_floats(static_cast<size_t>(kTokens * kKvDim), 12, -2.0f, 2.0f);
  d.q = random_floats(static_cast<size_t>(kTokens * kQDim), 13, -1.5f, 1.5f);
  const std::vector<float> f = inv_freq();
  for (int p = 0; p < kTokens; ++p) {
    rope_reference(d.k.data() + p * kKvDim, kKvHeads, kHeadDim, kHeadDim, p, f.data(), RopeStyle::kNormal);
    rope_reference(d.q.data() + p * kQDim, kHeads, kHeadDim, kHeadDim, p, f.data(), RopeStyle::kNormal);
  }
  return d;
}

// One layer's K and V over a gapped table: physical ids shuffled by
// `seed`, the `evicted` entries gaps whose positions are never written, the
// rest holding d's vectors at their original positions (sealed, as a
// forward pass leaves them).
struct GappedKv {
  std::vector<int32_t> table;
  std::vector<bool> kept;  // per table entry
  PagedStore k, v;
};

GappedKv make_gapped(TensorType dtype, const std::vector<int>& evicted, uint32_t seed, const Data& d) {
  const int n_table = (kTokens + kBlock - 1) / kBlock;
  GappedKv g;
  g.table.resize(static_cast<size_t>(n_table));
  std::iota(g.table.begin(), g.table.end(), 0);
  std::shuffle(g.table.begin(), g.table.end(), std::mt19937(seed));
  g.kept.assign(static_cast<size_t>(n_table), true);
  for (int e : evicted) {
    g.table[static_cast<size_t>(e)] = -1;
    g.kept[static_cast<size_t>(e)] = false;
  }
  g.k = make_store(dtype, n_table, KvLayout::kDimMajor);
  g.v = make_store(dtype, n_table, KvLayout::kTokenMajor);
  for (int p = 0; p < kTokens; ++p) {
    if (!g.kept[static_cast<size_t>(p / kBlock)]) continue;
    kv_store(g.k.layer, g.table.data(), p, d.k.data() + p * kKvDim);
    kv_store(g.v.layer, g.table.data(), p, d.v.data() + p * kKvDim);
  }
  for (int p = 0; p < kTokens; ++p) {
    if (!g.kept[static_cast<size_t>(p / kBlock)]) continue;
    kv_seal(g.k.layer, g.table.data(), p);
    kv_seal(g.v.layer, g.table.data(), p);
  }
  return g;
}

// Rows of d.q at positions pos.
std::vector<float> queries_at(const Data& d, const std::vector<int32_t>& pos) {
  std::vector<float> q(pos.size() * kQDim);
  for (size_t r = 0; r < pos.size(); ++r)
    std::copy_n(d.q.data() + pos[r] * kQDim, kQDim, q.data() + r * kQDim);
  return q;
}

// Softmax attention of query row p over the kept positions j <= p (kept:
// block j / kBlock not evicted), in double; values as the format stores
// them for F32/F16 (`round`), exact otherwise.
std::vector<float> reference(const Data& d, const std::vector<int32_t>& pos,
                             const std::vector<bool>& kept_block, bool f16) {
  auto stored = [f16](float x) { return f16 ? f16_to_f32(f32_to_f16(x)) : x; };
  const double scale = 1.0 / std::sqrt(static_cast<double>(kHeadDim));
  std::vector<float> out(pos.size() * kQDim);
  for (size_t r = 0; r < pos.size(); ++r) {
    const int p = pos[r];
    for (int h = 0; h < kHeads; ++h) {
      const int kvh = h / (kHeads / kKvHeads);
      const float* qv = d.q.data() + p * kQDim + h * kHeadDim;
      std::vector<int> keys;
      for (int j = 0; j <= p; ++j) {
        if (kept_block[static_cast<size_t>(j / kBlock)]) keys.push_back(j);
      }
      std::vector<double> w(keys.size());
      double mx = -INFINITY, sum = 0;
      for (size_t t = 0; t < keys.size(); ++t) {
        double dot = 0;
        for (int i = 0; i < kHeadDim; ++i)
          dot += double{qv[i]} * stored(d.k[keys[t] * kKvDim + kvh * kHeadDim + i]);
        w[t] = dot * scale;
        mx = std::max(mx, w[t]);
      }
      for (double& x : w) sum += x = std::exp(x - mx);
      for (int i = 0; i < kHeadDim; ++i) {
        double acc = 0;
        for (size_t t = 0; t < keys.size(); ++t)
          acc += w[t] * stored(d.v[keys[t] * kKvDim + kvh * kHeadDim + i]);
        out[r * kQDim + h * kHeadDim + i] = static_cast<float>(acc / sum);
      }
    }
  }
  return out;
}

struct EvictionCase {
  TensorType dtype;
  std::vector<int> evicted;  // table entries that are gaps
  double tolerance;          // against the reference on the raw vectors
};

class GappedAttention : public ::testing::TestWithParam<EvictionCase> {};

TEST_P(GappedAttention, AttendsOnlyOverKeptPositionsAtTheirOriginalPlaces) {
  const EvictionCase c = GetParam();
  const Data d = make_data();
  const GappedKv g = make_gapped(c.dtype, c.evicted, 5, d);
  const std::vector<int32_t>& table = g.table;
  const std::vector<bool>& kept = g.kept;
  const PagedKvLayer& kl = g.k.layer;
  const PagedKvLayer& vl = g.v.layer;
  // Queries in kept blocks only (a query's own block is never evicted): the
  // recent window, plus one early query where a sink block is kept.
  std::vector<int32_t> pos;
  for (int p = 64; p < kTokens; p += 3) pos.push_back(p);
  if (kept[0]) pos.push_back(9);
  const std::vector<float> q = queries_at(d, pos);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  const int n = static_cast<int>(pos.size());

  const std::vector<float> want = reference(d, pos, kept, c.dtype == TensorType::kF16);
  ThreadPool pool(2);
  std::vector<float> got(want.size());
  attention(q.data(), n, pos.data(), kHeads, kl, vl, table.data(), scale, got.data(), pool);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << "element " << i << ": an evicted block was read";
    worst = std::max(worst, std::fabs(double{got[i]} - want[i]));
  }
  EXPECT_LE(worst, c.tolerance);

  // The gaps matter: attention over every position differs from the gapped
  // one by more than the tolerance, so the check above would catch a kernel
  // that ignored them (in the quantized formats so do the NaN bytes of
  // never-written blocks and the 2e-5 check against the stored format).
  const std::vector<float> full = reference(d, pos, std::vector<bool>(kept.size(), true), false);
  double gap_effect = 0;
  for (size_t i = 0; i < full.size(); ++i)
    gap_effect = std::max(gap_effect, std::fabs(double{full[i]} - want[i]));
  EXPECT_GT(gap_effect, 2 * c.tolerance);

  // Every target, bit-identical alone, chunked and at other thread counts,
  // and within 2e-5 of the library's scalar reference on the stored format.
  std::vector<float> lib(want.size());
  attention_reference(q.data(), n, pos.data(), kHeads, kl, vl, table.data(), scale, lib.data());
  expect_attention_matches_and_invariant(q, n, pos.data(), kHeads, kl, vl, table.data(), scale, lib);
}

// The attention each block's keys received (snap eviction's evidence):
// per table entry, the softmax weights of its kept keys summed over queries
// and heads, from the raw vectors in double; evicted entries get none.
// The quantized formats read other key values, so they are held only to
// the totals and the empty gaps.
TEST(GappedAttentionKeyMass, IsEachBlocksShareOfTheSoftmax) {
  for (TensorType dtype : {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0, TensorType::kQ4_0}) {
    const bool exact = dtype == TensorType::kF32 || dtype == TensorType::kF16;
    SCOPED_TRACE(tensor_type_name(dtype));
    const int n_table = (kTokens + kBlock - 1) / kBlock;
    const Data d = make_data();
    const GappedKv g = make_gapped(dtype, {2, 3}, 9, d);
    const std::vector<bool>& kept = g.kept;
    std::vector<int32_t> pos;
    for (int p = 70; p < kTokens; p += 2) pos.push_back(p);
    const int n = static_cast<int>(pos.size());
    const std::vector<float> q = queries_at(d, pos);

    const bool f16 = dtype == TensorType::kF16;
    auto stored = [f16](float x) { return f16 ? f16_to_f32(f32_to_f16(x)) : x; };
    std::vector<double> want(static_cast<size_t>(n_table), 0.0);
    for (int p : pos) {
      for (int h = 0; h < kHeads; ++h) {
        const int kvh = h / (kHeads / kKvHeads);
        std::vector<double> w(static_cast<size_t>(p + 1), 0.0);
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j <= p; ++j) {
          if (!kept[static_cast<size_t>(j / kBlock)]) continue;
          double dot = 0;
          for (int i = 0; i < kHeadDim; ++i) {
            dot += double{d.q[p * kQDim + h * kHeadDim + i]} * stored(d.k[j * kKvDim + kvh * kHeadDim + i]);
          }
          w[j] = dot / std::sqrt(double{kHeadDim});
          mx = std::max(mx, w[j]);
        }
        for (int j = 0; j <= p; ++j)
          sum += w[j] = kept[static_cast<size_t>(j / kBlock)] ? std::exp(w[j] - mx) : 0;
        for (int j = 0; j <= p; ++j) want[static_cast<size_t>(j / kBlock)] += w[j] / sum;
      }
    }
    testing::for_each_target([&] {
      for (int threads : {1, 3}) {
        ThreadPool pool(threads);
        std::vector<float> mass(static_cast<size_t>(n_table), 0.0f);
        std::vector<float> out(pos.size() * kQDim);
        const AttentionSeq seq{0, n, g.table.data(), mass.data()};
        attention_batch(q.data(), pos.data(), {&seq, 1}, kHeads, g.k.layer, g.v.layer,
                        1.0f / std::sqrt(static_cast<float>(kHeadDim)), out.data(), pool);
        double total = 0;
        for (int b = 0; b < n_table; ++b) {
          if (exact) {
            EXPECT_NEAR(mass[static_cast<size_t>(b)], want[static_cast<size_t>(b)], 1e-4) << "block " << b;
          }
          total += mass[static_cast<size_t>(b)];
        }
        EXPECT_EQ(mass[2], 0.0f);
        EXPECT_EQ(mass[3], 0.0f);
        EXPECT_NEAR(total, n * kHeads, 1e-3);  // each query-head pair gives 1
      }
    });
  }
}

// Sinks kept with a gap after them; and no sinks (block 0 evicted, so the
// first kept block is not block 0).
INSTANTIATE_TEST_SUITE_P(
    Formats, GappedAttention,
    ::testing::Values(EvictionCase{TensorType::kF32, {1, 2, 3}, 2e-5}, EvictionCase{TensorType::kF16, {1, 2, 3}, 2e-5},
                      EvictionCase{TensorType::kQ8_0, {1, 2, 3}, 0.02}, EvictionCase{TensorType::kQ4_0, {1, 2, 3}, 0.2},
                      EvictionCase{TensorType::kF32, {0, 1, 3}, 2e-5}, EvictionCase{TensorType::kF16, {0, 2}, 2e-5},
                      EvictionCase{TensorType::kQ8_0, {0, 1, 3}, 0.02}, EvictionCase{TensorType::kQ4_0, {0, 2}, 0.2}));

}  // namespace
}  // namespace ladder::ops
