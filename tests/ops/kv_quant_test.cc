// The quantized KV formats (ops/kv_codec.h): element error bounds of the
// codec, byte sizes, and attention reading them in place -- against the
// scalar reference on every target, bit-identical however queries are
// batched or chunked, and within a stated distance of F32 attention.
//
// Stated bounds (checked below):
//   q8: |x - x'| <= max|x over the element's group of kv_channel_group(hd)
//       channels of its token and head| / 254 * (1 + 2^-10)
//   q4: |x - x'| <= (max - min + |min| 2^-10) / 30 * (1 + 2^-10) over the
//       element's group (a key channel's block tokens, a value token's channels)
//   q4 staged (partly filled block): F16 rounding, |x - x'| <= |x| 2^-11
//   attention output vs F32 on keys and values in [-2, 2]: q8 <= 0.02,
//   q4 <= 0.2 (max abs error over every element)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "common/half.h"
#include "ops/attention.h"
#include "ops/kv_codec.h"
#include "ops_test_util.h"

namespace ladder::ops {
namespace {

using testing::expect_attention_matches_and_invariant;
using testing::for_each_target;
using testing::make_store;
using testing::PagedStore;
using testing::random_floats;

// One layer's K or V in any format; staged formats give each block its own
// staging slot (as DenseKv does).
// Stores n tokens of [kvh][hd] values, then seals (as a forward pass does).
void store_all(const PagedKvLayer& l, const int32_t* table, int n, const float* vals) {
  const int dim = l.n_kv_heads * l.head_dim;
  for (int p = 0; p < n; ++p) kv_store(l, table, p, vals + p * dim);
  for (int p = 0; p < n; ++p) kv_seal(l, table, p);
}

TEST(KvCodec, BlockBytesFollowTheLayouts) {
  // bs 16, 8 KV heads, hd 128: per token and layer, K + V.
  const auto per_token = [](TensorType t) {
    return (kv_layer_block_bytes(t, KvLayout::kDimMajor, 16, 8, 128) +
            kv_layer_block_bytes(t, KvLayout::kTokenMajor, 16, 8, 128)) /
           16.0;
  };
  EXPECT_EQ(per_token(TensorType::kF16), 4096);
  EXPECT_EQ(per_token(TensorType::kQ8_0), 2 * (1024 + 64));  // int8 + an f16 scale per head and 32 channels
  // K: 8 x 128 channels x (4 param bytes + 8 nibble bytes) / 16 tokens;
  // V: 8 heads x (4 groups x 4 param bytes + 64 nibble bytes).
  EXPECT_EQ(per_token(TensorType::kQ4_0), 8 * 128 * 12 / 16 + 8 * (16 + 64));
  EXPECT_EQ(kv_layer_staging_bytes(TensorType::kQ4_0, 16, 8, 128), 16u * 8 * 128 * 2);
  EXPECT_EQ(kv_layer_staging_bytes(TensorType::kQ8_0, 16, 8, 128), 0u);
  EXPECT_EQ(kv_channel_group(128), 32);
  EXPECT_EQ(kv_channel_group(24), 24);
  EXPECT_NE(kv_shape_problem(TensorType::kQ4_0, 16, 7), nullptr);
  EXPECT_NE(kv_shape_problem(TensorType::kQ8_0, 5, 8), nullptr);
  EXPECT_NE(kv_shape_problem(TensorType::kQ4_K, 16, 8), nullptr);
  EXPECT_EQ(kv_shape_problem(TensorType::kQ4_0, 16, 8), nullptr);
  EXPECT_EQ(kv_dtype_from_short_name("Q4"), TensorType::kQ4_0);
  EXPECT_FALSE(kv_dtype_from_short_name("q5").has_value());
}

// A head with one large channel (keys often have a few): Q8's other groups
// keep their own scale, so small channels are not rounded to the large
// one's grid (a scale per head would give them errors up to 100 / 254).
TEST(KvCodec, Q8SmallChannelsKeepTheirPrecisionBesideALargeOne) {
  const int bs = 16, nkv = 1, hd = 128;
  std::vector<float> token(hd);
  for (int i = 0; i < hd; ++i) token[static_cast<size_t>(i)] = 0.01f * static_cast<float>((i % 7) - 3);
  token[5] = 100.0f;
  std::vector<int32_t> table = {0};
  for (KvLayout layout : {KvLayout::kDimMajor, KvLayout::kTokenMajor}) {
    PagedStore s = make_store(TensorType::kQ8_0, 1, bs, nkv, hd, layout, 0x5A);
    store_all(s.layer, table.data(), 1, token.data());
    for (int i = 32; i < hd; ++i) {  // the groups without the large channel
      EXPECT_NEAR(kv_decode_elem(s.layer, table.data(), 0, 0, i, 1), token[static_cast<size_t>(i)],
                  0.03 / 254 * (1 + std::ldexp(1.0, -10)) + 1e-9)
          << i;
    }
    EXPECT_NEAR(kv_decode_elem(s.layer, table.data(), 0, 0, 5, 1), 100.0f, 100.0 / 254 * 1.001);
  }
}

TEST(KvCodec, F16OutwardRounding) {
  for (float x : {0.1f, -0.1f, 1e-7f, -1e-7f, 3.14159f, 65504.0f, 1e9f, 0.0f}) {
    EXPECT_GE(f16_to_f32(f16_round_up(x)), std::min(x, 65504.0f)) << x;
    EXPECT_LE(f16_to_f32(f16_round_down(x)), std::max(x, -65504.0f)) << x;
    EXPECT_LE(f16_to_f32(f16_round_up(x)) - f16_to_f32(f16_round_down(x)), std::fabs(x) * 1e-3f + 6e-8f) << x;
  }
}

// Values with outliers: mostly in [-1, 1], one channel and one token large.
std::vector<float> test_values(int n_tokens, int dim, uint32_t seed) {
  auto v = random_floats(static_cast<size_t>(n_tokens * dim), seed, -1.0f, 1.0f);
  for (int t = 0; t < n_tokens; ++t) v[static_cast<size_t>(t * dim + 3)] *= 9.0f;  // an outlier channel
  for (int e = 0; e < dim; ++e) v[static_cast<size_t>(5 * dim + e)] *= 6.0f;       // an outlier token
  return v;
}

TEST(KvCodec, ElementErrorsStayWithinTheStatedBounds) {
  const int bs = 16, nkv = 2, hd = 64, n = 40;  // 2 full blocks and a partial one
  const int dim = nkv * hd;
  const auto vals = test_values(n, dim, 7);
  std::vector<int32_t> table = {2, 0, 1};
  for (KvLayout layout : {KvLayout::kDimMajor, KvLayout::kTokenMajor}) {
    for (TensorType dtype : {TensorType::kQ8_0, TensorType::kQ4_0}) {
      PagedStore s = make_store(dtype, 3, bs, nkv, hd, layout, 0xA5);
      store_all(s.layer, table.data(), n, vals.data());
      double worst = 0;  // error / bound
      for (int p = 0; p < n; ++p) {
        for (int h = 0; h < nkv; ++h) {
          for (int i = 0; i < hd; ++i) {
            const float x = vals[static_cast<size_t>(p * dim + h * hd + i)];
            const float got = kv_decode_elem(s.layer, table.data(), p, h, i, n);
            double bound;
            const bool staged = dtype == TensorType::kQ4_0 && p >= 32;
            if (staged) {
              bound = std::fabs(x) * std::ldexp(1.0, -11) + 1e-7;
            } else if (dtype == TensorType::kQ8_0) {
              float amax = 0;
              const int g = kv_channel_group(hd);
              for (int c = i / g * g; c < i / g * g + g; ++c)
                amax = std::max(amax, std::fabs(vals[static_cast<size_t>(p * dim + h * hd + c)]));
              bound = amax / 254.0 * (1 + std::ldexp(1.0, -10)) + 1e-7;
            } else {
              // The element's group: a key channel over its block, or a value
              // token's group of channels.
              float lo = INFINITY, hi = -INFINITY;
              if (layout == KvLayout::kDimMajor) {
                for (int t = p / bs * bs; t < p / bs * bs + bs; ++t) {
                  lo = std::min(lo, vals[static_cast<size_t>(t * dim + h * hd + i)]);
                  hi = std::max(hi, vals[static_cast<size_t>(t * dim + h * hd + i)]);
                }
              } else {
                const int g = kv_channel_group(hd);
                for (int c = i / g * g; c < i / g * g + g; ++c) {
                  lo = std::min(lo, vals[static_cast<size_t>(p * dim + h * hd + c)]);
                  hi = std::max(hi, vals[static_cast<size_t>(p * dim + h * hd + c)]);
                }
              }
              bound =
                  (hi - lo + std::fabs(lo) * std::ldexp(1.0, -10)) / 30.0 * (1 + std::ldexp(1.0, -10)) + 1e-7;
            }
            const double err = std::fabs(static_cast<double>(got) - x);
            ASSERT_LE(err, bound) << "format " << kv_dtype_short_name(dtype) << " pos " << p << " head " << h
                                  << " dim " << i;
            worst = std::max(worst, err / bound);
          }
        }
      }
      // The bounds are tight: some element comes close to them.
      EXPECT_GT(worst, 0.5) << kv_dtype_short_name(dtype);
    }
  }
}

struct QuantCase {
  TensorType dtype;
  int n_heads, n_kv_heads, head_dim, block_size, n_tokens;
  AttentionScoring scoring = {};  // a sliding window, a soft cap
};

class QuantAttentionTest : public ::testing::TestWithParam<QuantCase> {};

TEST_P(QuantAttentionTest, MatchesReferenceIsBatchInvariantAndNearF32) {
  const QuantCase c = GetParam();
  const int n_blocks = (c.n_tokens + c.block_size - 1) / c.block_size + 2;
  PagedStore k = make_store(c.dtype, n_blocks, c.block_size, c.n_kv_heads, c.head_dim, KvLayout::kDimMajor, 0xA5);
  PagedStore v = make_store(c.dtype, n_blocks, c.block_size, c.n_kv_heads, c.head_dim, KvLayout::kTokenMajor, 0xA5);
  PagedStore kf =
      make_store(TensorType::kF32, n_blocks, c.block_size, c.n_kv_heads, c.head_dim, KvLayout::kDimMajor, 0xA5);
  PagedStore vf =
      make_store(TensorType::kF32, n_blocks, c.block_size, c.n_kv_heads, c.head_dim, KvLayout::kTokenMajor, 0xA5);
  std::vector<int32_t> table(n_blocks);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937(3));
  const int kv_dim = c.n_kv_heads * c.head_dim;
  const auto kv = random_floats(static_cast<size_t>(2 * c.n_tokens * kv_dim), 4, -2.0f, 2.0f);
  store_all(k.layer, table.data(), c.n_tokens, kv.data());
  store_all(v.layer, table.data(), c.n_tokens, kv.data() + c.n_tokens * kv_dim);
  store_all(kf.layer, table.data(), c.n_tokens, kv.data());
  store_all(vf.layer, table.data(), c.n_tokens, kv.data() + c.n_tokens * kv_dim);
  const int q_dim = c.n_heads * c.head_dim;
  const auto q = random_floats(static_cast<size_t>(c.n_tokens * q_dim), 5, -1.5f, 1.5f);
  std::vector<int32_t> pos(c.n_tokens);
  std::iota(pos.begin(), pos.end(), 0);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  std::vector<float> want(static_cast<size_t>(c.n_tokens * q_dim)), exact(want.size());
  attention_reference(q.data(), c.n_tokens, pos.data(), c.n_heads, k.layer, v.layer, table.data(), scale,
                      want.data(), c.scoring);
  attention_reference(q.data(), c.n_tokens, pos.data(), c.n_heads, kf.layer, vf.layer, table.data(), scale,
                      exact.data(), c.scoring);
  double max_err = 0;
  for (size_t i = 0; i < want.size(); ++i) max_err = std::max(max_err, std::fabs(double{want[i]} - exact[i]));
  const double bound = c.dtype == TensorType::kQ8_0 ? 0.02 : 0.2;
  EXPECT_LE(max_err, bound) << "quantization error against F32";
  EXPECT_GT(max_err, 0.0) << "the format is lossy: an exact match means F32 was read";

  expect_attention_matches_and_invariant(q, c.n_tokens, pos.data(), c.n_heads, k.layer, v.layer, table.data(),
                                         scale, want, c.scoring);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, QuantAttentionTest,
    ::testing::Values(QuantCase{TensorType::kQ8_0, 4, 2, 64, 16, 37}, QuantCase{TensorType::kQ4_0, 4, 2, 64, 16, 37},
                      QuantCase{TensorType::kQ8_0, 8, 1, 128, 32, 70}, QuantCase{TensorType::kQ4_0, 8, 1, 128, 32, 70},
                      // stories260K's heads: 8 dims, 2 queries per KV head.
                      QuantCase{TensorType::kQ8_0, 8, 4, 8, 16, 41}, QuantCase{TensorType::kQ4_0, 8, 4, 8, 16, 41},
                      // Narrow blocks, head dims off the vector width, GQA of 3.
                      QuantCase{TensorType::kQ8_0, 6, 2, 24, 6, 29}, QuantCase{TensorType::kQ4_0, 6, 2, 24, 6, 29},
                      QuantCase{TensorType::kQ4_0, 6, 1, 20, 8, 19}, QuantCase{TensorType::kQ8_0, 2, 1, 7, 4, 23},
                      // Llama-3-8B's heads (128 dims, GQA of 4) in 16-token blocks.
                      QuantCase{TensorType::kQ8_0, 8, 2, 128, 16, 45}, QuantCase{TensorType::kQ4_0, 8, 2, 128, 16, 45},
                      // 16-token blocks whose key codes do not fill whole vectors.
                      QuantCase{TensorType::kQ4_0, 4, 1, 20, 16, 40},
                      // Sliding windows (inside one block, across blocks) and a soft cap.
                      QuantCase{TensorType::kQ8_0, 4, 2, 64, 16, 45, {5, 0.0f}},
                      QuantCase{TensorType::kQ4_0, 4, 2, 64, 16, 45, {21, 0.0f}},
                      QuantCase{TensorType::kQ8_0, 6, 2, 24, 6, 29, {7, 1.5f}},
                      QuantCase{TensorType::kQ4_0, 8, 4, 8, 16, 41, {16, 2.0f}}));

// A partly filled q4 block is read from staging by the queries inside it and
// sealed by the queries past it: a query's output is the same whether the
// block was still partial or already full when it ran (chunked prefill
// against decode), because the rule depends on positions only.
TEST(QuantAttention, Q4ReadsStagingForQueriesInsideTheBlock) {
  const int bs = 8, hd = 16, n = 13;
  PagedStore k = make_store(TensorType::kQ4_0, 2, bs, 1, hd, KvLayout::kDimMajor, 0xA5);
  PagedStore v = make_store(TensorType::kQ4_0, 2, bs, 1, hd, KvLayout::kTokenMajor, 0xA5);
  const int32_t table[] = {1, 0};
  const auto vals = random_floats(static_cast<size_t>(2 * n * hd), 9, -2.0f, 2.0f);
  const auto q = random_floats(static_cast<size_t>(hd), 10, -1.0f, 1.0f);
  ThreadPool pool(1);
  // Decode order: query at position 5 runs when only positions 0..5 exist.
  std::vector<float> early(static_cast<size_t>(hd)), late(early.size()), staged(early.size());
  store_all(k.layer, table, 6, vals.data());
  store_all(v.layer, table, 6, vals.data() + n * hd);
  const int32_t p5[] = {5};
  attention(q.data(), 1, p5, 1, k.layer, v.layer, table, 0.25f, early.data(), pool);
  // Then the rest of the sequence arrives and block 0 seals.
  store_all(k.layer, table, n, vals.data());
  store_all(v.layer, table, n, vals.data() + n * hd);
  attention(q.data(), 1, p5, 1, k.layer, v.layer, table, 0.25f, late.data(), pool);
  EXPECT_EQ(std::memcmp(early.data(), late.data(), early.size() * sizeof(float)), 0);
  // The early read saw F16 values, not the sealed 4-bit ones.
  EXPECT_NE(kv_decode_elem(k.layer, table, 3, 0, 0, 6), kv_decode_elem(k.layer, table, 3, 0, 0, 8));
  EXPECT_EQ(kv_decode_elem(k.layer, table, 3, 0, 0, 6), f16_to_f32(f32_to_f16(vals[3 * hd])));
}

}  // namespace
}  // namespace ladder::ops
