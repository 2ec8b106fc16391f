#include "ops/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "common/half.h"
#include "ops_test_util.h"

namespace ladder::ops {
namespace {

using testing::expect_attention_matches_and_invariant;
using testing::for_each_target;
using testing::make_store;
using testing::PagedStore;
using testing::random_floats;

struct AttentionCase {
  TensorType dtype;
  int n_heads, n_kv_heads, head_dim, block_size, n_tokens;
  AttentionScoring scoring = {};  // a sliding window, a soft cap
};

class AttentionTest : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionTest, MatchesReferenceAndIsBatchInvariant) {
  const AttentionCase c = GetParam();
  const int n_blocks = (c.n_tokens + c.block_size - 1) / c.block_size + 2;
  PagedStore k = make_store(c.dtype, n_blocks, c.block_size, c.n_kv_heads, c.head_dim, KvLayout::kDimMajor);
  PagedStore v = make_store(c.dtype, n_blocks, c.block_size, c.n_kv_heads, c.head_dim, KvLayout::kTokenMajor);
  std::vector<int32_t> table(n_blocks);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937(3));
  const int kv_dim = c.n_kv_heads * c.head_dim;
  const auto kv = random_floats(static_cast<size_t>(2 * c.n_tokens * kv_dim), 4, -2.0f, 2.0f);
  for (int p = 0; p < c.n_tokens; ++p) {
    kv_store(k.layer, table.data(), p, kv.data() + p * kv_dim);
    kv_store(v.layer, table.data(), p, kv.data() + (c.n_tokens + p) * kv_dim);
  }
  const int q_dim = c.n_heads * c.head_dim;
  const auto q = random_floats(static_cast<size_t>(c.n_tokens * q_dim), 5, -1.5f, 1.5f);
  std::vector<int32_t> pos(c.n_tokens);
  std::iota(pos.begin(), pos.end(), 0);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  std::vector<float> want(static_cast<size_t>(c.n_tokens * q_dim));
  attention_reference(q.data(), c.n_tokens, pos.data(), c.n_heads, k.layer, v.layer, table.data(), scale,
                      want.data(), c.scoring);
  expect_attention_matches_and_invariant(q, c.n_tokens, pos.data(), c.n_heads, k.layer, v.layer, table.data(),
                                         scale, want, c.scoring);
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionTest,
                         ::testing::Values(AttentionCase{TensorType::kF32, 4, 2, 64, 16, 37},
                                           AttentionCase{TensorType::kF16, 4, 2, 64, 16, 37},
                                           AttentionCase{TensorType::kF32, 6, 6, 20, 8, 19},
                                           AttentionCase{TensorType::kF16, 8, 1, 128, 32, 70},
                                           // Blocks narrower than a vector, head_dim not a multiple of 4.
                                           AttentionCase{TensorType::kF32, 4, 4, 22, 12, 29},
                                           AttentionCase{TensorType::kF16, 2, 1, 7, 5, 23},
                                           // GQA groups of 3 and 6: head tiles padded, split across tiles.
                                           AttentionCase{TensorType::kF32, 6, 2, 16, 16, 21},
                                           AttentionCase{TensorType::kF16, 6, 1, 32, 8, 19},
                                           // Sliding windows: one key, inside a block, across blocks,
                                           // longer than the sequence; gemma2's soft cap with and
                                           // without a window.
                                           AttentionCase{TensorType::kF32, 4, 2, 64, 16, 37, {1, 0.0f}},
                                           AttentionCase{TensorType::kF16, 4, 2, 64, 16, 37, {5, 0.0f}},
                                           AttentionCase{TensorType::kF32, 6, 2, 16, 8, 45, {19, 0.0f}},
                                           AttentionCase{TensorType::kF16, 8, 1, 128, 32, 70, {64, 0.0f}},
                                           AttentionCase{TensorType::kF32, 2, 1, 7, 5, 23, {100, 0.0f}},
                                           AttentionCase{TensorType::kF32, 4, 2, 64, 16, 37, {0, 2.0f}},
                                           AttentionCase{TensorType::kF16, 6, 2, 16, 8, 45, {11, 1.0f}}));

// Three sequences of different lengths, each in its own blocks, batched as
// a decode row, a prefill chunk and an empty sequence: every row equals the
// single-sequence call bit for bit and the reference within tolerance.
TEST(Attention, BatchOfSequencesMatchesEachAlone) {
  for (TensorType dtype : {TensorType::kF32, TensorType::kF16}) {
    const int n_heads = 6, n_kv_heads = 3, hd = 48, bs = 8;
    const int lens[] = {29, 0, 11, 40};   // KV positions each sequence holds
    const int n_new[] = {1, 0, 11, 5};    // query rows each contributes (its last positions)
    const int n_blocks = 20;
    PagedStore k = make_store(dtype, n_blocks, bs, n_kv_heads, hd, KvLayout::kDimMajor);
    PagedStore v = make_store(dtype, n_blocks, bs, n_kv_heads, hd, KvLayout::kTokenMajor);
    std::vector<int32_t> physical(n_blocks);
    std::iota(physical.begin(), physical.end(), 0);
    std::shuffle(physical.begin(), physical.end(), std::mt19937(11));
    std::vector<std::vector<int32_t>> tables;
    int next_block = 0;
    const int kv_dim = n_kv_heads * hd;
    for (int s = 0; s < 4; ++s) {
      const int blocks = (lens[s] + bs - 1) / bs;
      tables.emplace_back(physical.begin() + next_block, physical.begin() + next_block + blocks);
      next_block += blocks;
      const auto vals = random_floats(static_cast<size_t>(2 * std::max(lens[s], 1) * kv_dim), 20 + s, -2.0f, 2.0f);
      for (int p = 0; p < lens[s]; ++p) {
        kv_store(k.layer, tables[s].data(), p, vals.data() + p * kv_dim);
        kv_store(v.layer, tables[s].data(), p, vals.data() + (lens[s] + p) * kv_dim);
      }
    }
    std::vector<AttentionSeq> seqs;
    std::vector<int32_t> pos;
    for (int s = 0; s < 4; ++s) {
      seqs.push_back({static_cast<int64_t>(pos.size()), n_new[s], tables[s].data()});
      for (int i = 0; i < n_new[s]; ++i) pos.push_back(lens[s] - n_new[s] + i);
    }
    const int q_dim = n_heads * hd;
    const auto q = random_floats(pos.size() * q_dim, 30, -1.5f, 1.5f);
    const float scale = 0.2f;
    for_each_target([&] {
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        std::vector<float> batched(q.size());
        attention_batch(q.data(), pos.data(), seqs, n_heads, k.layer, v.layer, scale, batched.data(), pool);
        for (const AttentionSeq& s : seqs) {
          if (s.n_rows == 0) continue;
          const size_t off = static_cast<size_t>(s.row0) * q_dim;
          std::vector<float> alone(static_cast<size_t>(s.n_rows) * q_dim), want(alone.size());
          attention(q.data() + off, s.n_rows, pos.data() + s.row0, n_heads, k.layer, v.layer, s.block_table,
                    scale, alone.data(), pool);
          ASSERT_EQ(std::memcmp(alone.data(), batched.data() + off, alone.size() * sizeof(float)), 0)
              << "sequence at row " << s.row0;
          attention_reference(q.data() + off, s.n_rows, pos.data() + s.row0, n_heads, k.layer, v.layer,
                              s.block_table, scale, want.data());
          for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(alone[i], want[i], 2e-5) << i;
        }
      }
    });
  }
}

TEST(Attention, SingleKeyReturnsItsValue) {
  PagedStore k = make_store(TensorType::kF32, 1, 4, 1, 4, KvLayout::kDimMajor);
  PagedStore v = make_store(TensorType::kF32, 1, 4, 1, 4, KvLayout::kTokenMajor);
  const int32_t table[] = {0};
  const float kv[] = {1, 0, 0, 0}, vv[] = {0.5f, -2, 3, 7};
  kv_store(k.layer, table, 0, kv);
  kv_store(v.layer, table, 0, vv);
  const float q[] = {9, 9, 9, 9};
  const int32_t pos[] = {0};
  float out[4];
  ThreadPool pool(1);
  attention(q, 1, pos, 1, k.layer, v.layer, table, 0.5f, out, pool);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], vv[i]);
}

// Byte offset of element e of the token in slot `slot` of a block (hand
// computed from the layout's definition in attention.h: 4 slots, 48 elements).
size_t element_offset(KvLayout layout, int slot, int e, size_t elem) {
  return (layout == KvLayout::kTokenMajor ? static_cast<size_t>(slot * 48 + e) : static_cast<size_t>(e * 4 + slot)) *
         elem;
}

TEST(Attention, KvStoreWritesTheRightSlot) {
  for (KvLayout layout : {KvLayout::kTokenMajor, KvLayout::kDimMajor}) {
    for (TensorType dtype : {TensorType::kF32, TensorType::kF16}) {
      for_each_target([&] {
        PagedStore s = make_store(dtype, 3, 4, 2, 24, layout);
        const int32_t table[] = {2, 0, 1};
        const auto vec = random_floats(48, 8, -70000.0f, 70000.0f);  // includes F16 overflow to inf
        kv_store(s.layer, table, 5, vec.data());                     // logical block 1 -> physical 0, slot 1
        const size_t elem = dtype == TensorType::kF16 ? 2 : 4;
        std::vector<bool> written(s.bytes.size(), false);
        for (int e = 0; e < 48; ++e) {
          const size_t off = 0 * s.layer.block_stride_bytes + element_offset(layout, 1, e, elem);
          for (size_t b = 0; b < elem; ++b) written[off + b] = true;
          if (dtype == TensorType::kF16) {
            uint16_t h;
            std::memcpy(&h, s.bytes.data() + off, 2);
            ASSERT_EQ(h, f32_to_f16(vec[e])) << e;
          } else {
            float f;
            std::memcpy(&f, s.bytes.data() + off, 4);
            ASSERT_EQ(f, vec[e]) << e;
          }
        }
        // Nothing else was touched.
        for (size_t i = 0; i < s.bytes.size(); ++i) {
          if (!written[i]) {
            ASSERT_EQ(s.bytes[i], 0xFF) << i;
          }
        }
      });
    }
  }
}

}  // namespace
}  // namespace ladder::ops
