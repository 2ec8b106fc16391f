#include "ops/packed_weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ops_test_util.h"

namespace ladder::ops {
namespace {

using testing::for_each_target;
using testing::random_floats;
using testing::random_weights;

TEST(PackedWeights, BitIdenticalToUnpackedOnEveryTarget) {
  for_each_target([&] {
    for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{256, 40}, {768, 16}, {96, 33}}) {
      const auto w = random_weights(TensorType::kQ8_0, n_in, n_out, 31);
      const WeightMatrix wm{TensorType::kQ8_0, w.data(), n_in, n_out};
      ThreadPool pool2(2);
      const PackedWeights packed = pack_weights(wm, pool2);
      // The AVX-512 VNNI target packs Q8_0; every other target falls back.
      EXPECT_EQ(!packed.empty(), active_target_name() == "AVX3_DL");
      if (!packed.empty()) {
        EXPECT_EQ(packed.bytes, static_cast<size_t>((n_out + 15) / 16 * (n_in / 32) * 576));
      }
      const auto x = random_floats(static_cast<size_t>(33 * n_in), 32);
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        for (int64_t rows : {1, 3, 4, 16, 33}) {
          std::vector<float> want(static_cast<size_t>(rows * n_out)), got(want.size());
          matmul(wm, x.data(), rows, want.data(), pool);
          matmul(wm, packed, x.data(), rows, got.data(), pool);
          ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
              << n_in << "x" << n_out << " rows " << rows << " threads " << threads;
        }
      }
    }
  });
}

// Products of one input in one dispatch (packed Q8_0, plain Q8_0, Q4_K, F16
// and a type without a fast kernel, widths off the 16-column grain): each
// output equals its own matmul() call bit for bit.
TEST(PackedWeights, GroupOfProductsMatchesEachAlone) {
  const int64_t n_in = 256;
  const std::pair<TensorType, int64_t> kinds[] = {{TensorType::kQ8_0, 40},
                                                  {TensorType::kQ8_0, 7},
                                                  {TensorType::kQ4_K, 33},
                                                  {TensorType::kF16, 19},
                                                  {TensorType::kQ5_1, 18}};
  std::vector<std::vector<uint8_t>> data;
  std::vector<WeightMatrix> mats;
  for (const auto& [type, n_out] : kinds) {
    data.push_back(random_weights(type, n_in, n_out, 40 + static_cast<int>(data.size())));
    mats.push_back({type, data.back().data(), n_in, n_out});
  }
  const auto x = random_floats(static_cast<size_t>(9 * n_in), 41);
  for_each_target([&] {
    ThreadPool pack_pool(2);
    const PackedWeights packed = pack_weights(mats[0], pack_pool);  // only the first is packed
    const PackedWeights none;
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (int64_t rows : {1, 5, 9}) {
        std::vector<std::vector<float>> got(mats.size());
        std::vector<MatmulOutput> outs;
        for (size_t i = 0; i < mats.size(); ++i) {
          got[i].assign(static_cast<size_t>(rows * mats[i].n_out), -1.0f);
          outs.push_back({&mats[i], i == 0 ? &packed : &none, got[i].data()});
        }
        matmul_group(outs, x.data(), rows, pool);
        for (size_t i = 0; i < mats.size(); ++i) {
          std::vector<float> want(got[i].size());
          matmul(mats[i], i == 0 ? packed : none, x.data(), rows, want.data(), pool);
          ASSERT_EQ(std::memcmp(want.data(), got[i].data(), want.size() * sizeof(float)), 0)
              << "product " << i << " rows " << rows << " threads " << threads;
        }
      }
    }
  });
}

TEST(PackedWeights, OnlyQ8_0IsPackedAndOtherTargetsFallBack) {
  const auto w = random_weights(TensorType::kQ4_0, 256, 16, 3);
  ThreadPool pool(2);
  EXPECT_TRUE(pack_weights({TensorType::kQ4_0, w.data(), 256, 16}, pool).empty());

  // Packed for the best target, then used while dispatch is forced to the
  // last (portable) one: falls back to that target's own kernel.
  const auto q8 = random_weights(TensorType::kQ8_0, 256, 16, 4);
  const WeightMatrix wm{TensorType::kQ8_0, q8.data(), 256, 16};
  const PackedWeights packed = pack_weights(wm, pool);
  const auto targets = available_targets();
  force_target_for_test(targets.back());
  const auto x = random_floats(2 * 256, 5);
  std::vector<float> want(32), got(32);
  matmul(wm, x.data(), 2, want.data(), pool);
  matmul(wm, packed, x.data(), 2, got.data(), pool);
  force_target_for_test(0);
  EXPECT_EQ(want, got);
}

}  // namespace
}  // namespace ladder::ops
