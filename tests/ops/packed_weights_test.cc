#include "ops/packed_weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/tensor_type.h"
#include "ops_test_util.h"

namespace ladder::ops {
namespace {

using testing::for_each_target;
using testing::random_floats;
using testing::random_weights;

// Bytes per 16 columns x 64 elements (one unit of either layout).
constexpr size_t kUnitBytes = 576;

TEST(PackedWeights, BitIdenticalToUnpackedOnEveryTarget) {
  for_each_target([&] {
    for (TensorType type : {TensorType::kQ8_0, TensorType::kQ4_0}) {
      // 96x33: an odd number of blocks and a short last column group.
      for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{256, 40}, {768, 16}, {96, 33}}) {
        const auto w = random_weights(type, n_in, n_out, 31);
        const WeightMatrix wm{type, w.data(), n_in, n_out};
        ThreadPool pool2(2);
        const PackedWeights packed = pack_weights(wm, pool2);
        // The AVX-512 VNNI target packs Q8_0 and Q4_0; every other target falls back.
        EXPECT_EQ(!packed.empty(), active_target_name() == "AVX3_DL");
        if (!packed.empty()) {
          const int64_t groups = (n_out + 15) / 16;
          const int64_t nb = n_in / 32;
          // Q8_0: one unit per block; Q4_0: one per two blocks (288 bytes per
          // 16 x 32, the size of Q4_0), an odd last block padded.
          const int64_t units = type == TensorType::kQ8_0 ? nb : (nb + 1) / 2;
          EXPECT_EQ(packed.bytes, static_cast<size_t>(groups * units) * kUnitBytes);
        }
        const auto x = random_floats(static_cast<size_t>(33 * n_in), 32);
        for (int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          for (int64_t rows : {1, 3, 4, 16, 33}) {
            std::vector<float> want(static_cast<size_t>(rows * n_out)), got(want.size());
            matmul(wm, x.data(), rows, want.data(), pool);
            matmul(wm, packed, x.data(), rows, got.data(), pool);
            ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
                << tensor_type_name(type) << " " << n_in << "x" << n_out << " rows " << rows << " threads "
                << threads;
          }
        }
      }
    }
  });
}

// Extreme nibbles and activations: every Q4_0 weight -8 or +7 (scale 1) and
// activations of +-127 after quantization, so the integer block sums reach
// their largest magnitudes; packed still equals unpacked bit for bit.
TEST(PackedWeights, Q4_0ExtremesBitIdentical) {
  const int64_t n_in = 128, n_out = 20;
  const size_t rb = row_bytes(traits_of(TensorType::kQ4_0), static_cast<size_t>(n_in));
  std::vector<uint8_t> w(rb * n_out);
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t b = 0; b < n_in / 32; ++b) {
      auto* blk = reinterpret_cast<BlockQ4_0*>(w.data() + o * rb) + b;
      blk->d = 0x3C00;  // 1.0
      for (int i = 0; i < 16; ++i) blk->qs[i] = static_cast<uint8_t>((o + b + i) % 3 == 0 ? 0x0F : 0xF0);
    }
  }
  const WeightMatrix wm{TensorType::kQ4_0, w.data(), n_in, n_out};
  std::vector<float> x(static_cast<size_t>(5 * n_in));
  for (size_t i = 0; i < x.size(); ++i) x[i] = i % 5 == 0 ? -1.0f : 1.0f;
  for_each_target([&] {
    ThreadPool pool(2);
    const PackedWeights packed = pack_weights(wm, pool);
    for (int64_t rows : {1, 5}) {
      std::vector<float> want(static_cast<size_t>(rows * n_out)), got(want.size());
      matmul(wm, x.data(), rows, want.data(), pool);
      matmul(wm, packed, x.data(), rows, got.data(), pool);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << "rows " << rows;
    }
  });
}

// Products of one input in one dispatch (packed Q8_0 and Q4_0, plain Q8_0
// and Q4_0, Q4_K, F16 and a type without a fast kernel, widths off the
// 16-column grain): each output equals matmul() of its unpacked weights
// alone, bit for bit.
TEST(PackedWeights, GroupOfProductsMatchesEachAlone) {
  const int64_t n_in = 256;
  const std::pair<TensorType, int64_t> kinds[] = {
      {TensorType::kQ8_0, 40}, {TensorType::kQ4_0, 24}, {TensorType::kQ8_0, 7}, {TensorType::kQ4_0, 9},
      {TensorType::kQ4_K, 33}, {TensorType::kF16, 19},  {TensorType::kQ5_1, 18}};
  std::vector<std::vector<uint8_t>> data;
  std::vector<WeightMatrix> mats;
  for (const auto& [type, n_out] : kinds) {
    data.push_back(random_weights(type, n_in, n_out, 40 + static_cast<int>(data.size())));
    mats.push_back({type, data.back().data(), n_in, n_out});
  }
  const auto x = random_floats(static_cast<size_t>(9 * n_in), 41);
  for_each_target([&] {
    ThreadPool pack_pool(2);
    // Only the first two are packed.
    std::vector<PackedWeights> packed;
    for (size_t i = 0; i < mats.size(); ++i)
      packed.push_back(i < 2 ? pack_weights(mats[i], pack_pool) : PackedWeights{});
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (int64_t rows : {1, 5, 9}) {
        std::vector<std::vector<float>> got(mats.size());
        std::vector<MatmulOutput> outs;
        for (size_t i = 0; i < mats.size(); ++i) {
          got[i].assign(static_cast<size_t>(rows * mats[i].n_out), -1.0f);
          outs.push_back({&mats[i], &packed[i], got[i].data()});
        }
        matmul_group(outs, x.data(), rows, pool);
        for (size_t i = 0; i < mats.size(); ++i) {
          std::vector<float> want(got[i].size());
          matmul(mats[i], x.data(), rows, want.data(), pool);
          ASSERT_EQ(std::memcmp(want.data(), got[i].data(), want.size() * sizeof(float)), 0)
              << "product " << i << " rows " << rows << " threads " << threads;
        }
      }
    }
  });
}

TEST(PackedWeights, OnlyQ8_0AndQ4_0ArePackedAndOtherTargetsFallBack) {
  ThreadPool pool(2);
  const bool vnni = active_target_name() == "AVX3_DL";
  for (TensorType type : {TensorType::kQ4_K, TensorType::kQ6_K, TensorType::kQ5_0, TensorType::kF16}) {
    const auto w = random_weights(type, 256, 16, 3);
    EXPECT_TRUE(pack_weights({type, w.data(), 256, 16}, pool).empty()) << tensor_type_name(type);
  }
  for (TensorType type : {TensorType::kQ8_0, TensorType::kQ4_0}) {
    SCOPED_TRACE(tensor_type_name(type));
    // Packed for the best target, then used while dispatch is forced to the
    // last (portable) one: falls back to that target's own kernel.
    const auto q = random_weights(type, 256, 16, 4);
    const WeightMatrix wm{type, q.data(), 256, 16};
    const PackedWeights packed = pack_weights(wm, pool);
    EXPECT_EQ(!packed.empty(), vnni);
    const auto targets = available_targets();
    force_target_for_test(targets.back());
    const auto x = random_floats(2 * 256, 5);
    std::vector<float> want(32), got(32);
    matmul(wm, x.data(), 2, want.data(), pool);
    matmul(wm, packed, x.data(), 2, got.data(), pool);
    force_target_for_test(0);
    EXPECT_EQ(want, got);
  }
}

}  // namespace
}  // namespace ladder::ops
