#include "ops/packed_weights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/half.h"
#include "common/tensor_type.h"
#include "gguf/quant.h"
#include "ops/amx.h"
#include "ops/bf16_dot.h"
#include "ops_test_util.h"

namespace ladder::ops {
namespace {

using testing::dequantized;
using testing::for_each_target;
using testing::random_floats;
using testing::random_weights;

// Bytes per 16 columns x 64 elements of packed Q4_0 (one unit).
constexpr size_t kUnitBytes = 576;

// The packed layout itself (pack_weights_always: whatever this machine's
// kernel choice, ops/kernel_choice.h). Q8_0 and Q4_0 only: packed Q4_K and
// Q6_K sum in another order than their
// unpacked kernels (see KQuants* below).
TEST(PackedWeights, BitIdenticalToUnpackedOnEveryTarget) {
  for_each_target([&] {
    for (TensorType type : {TensorType::kQ8_0, TensorType::kQ4_0}) {
      // 96x33: an odd number of blocks and a short last column group.
      for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{256, 40}, {768, 16}, {96, 33}}) {
        const auto w = random_weights(type, n_in, n_out, 31);
        const WeightMatrix wm{type, w.data(), n_in, n_out};
        ThreadPool pool2(2);
        const PackedWeights packed = pack_weights_always(wm, pool2);
        // The AVX-512 VNNI target packs Q8_0 and Q4_0 (and the K-quants:
        // tested below); every other target falls back.
        EXPECT_EQ(!packed.empty(), active_target_name() == "AVX3_DL");
        if (!packed.empty()) {
          const int64_t groups = (n_out + 15) / 16;
          const int64_t nb = n_in / 32;
          // One unit per two blocks, an odd last block padded: Q8_0 1088
          // bytes (544 per 16 x 32, the size of Q8_0), Q4_0 576 (288, the
          // size of Q4_0).
          const size_t unit = type == TensorType::kQ8_0 ? 1088 : kUnitBytes;
          EXPECT_EQ(packed.bytes, static_cast<size_t>(groups * ((nb + 1) / 2)) * unit);
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
    const PackedWeights packed = pack_weights_always(wm, pool);
    for (int64_t rows : {1, 5}) {
      std::vector<float> want(static_cast<size_t>(rows * n_out)), got(want.size());
      matmul(wm, x.data(), rows, want.data(), pool);
      matmul(wm, packed, x.data(), rows, got.data(), pool);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << "rows " << rows;
    }
  });
}

// Float weights packed for decode (a float tile's columns interleaved per
// vector): the same bits as the stored layout for every row count, thread
// count and target, with n_in off the vector width and n_out off the tile
// width (zero padding on both). Where AMX-BF16 is active F16 and BF16 pack
// for its tiles instead (amx_test.cc); the BF16 dot kernel, which would take
// BF16 where the CPU has AVX512-BF16, is declined here (bf16_dot_test.cc).
TEST(PackedWeights, FloatChunksBitIdenticalToStoredOnEveryTarget) {
  set_bf16_dot_wanted(false);
  struct Restore {
    ~Restore() { set_bf16_dot_wanted(std::nullopt); }
  } restore;
  for_each_target([&] {
    for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kBF16}) {
      for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{256, 40}, {768, 16}, {100, 33}, {7, 5}}) {
        const auto w = random_weights(type, n_in, n_out, 61);
        const WeightMatrix wm{type, w.data(), n_in, n_out};
        ThreadPool pool2(2);
        const PackedWeights packed = pack_weights_always(wm, pool2);
        const std::string target = active_target_name();
        const bool x86 = target == "AVX2" || target == "AVX3" || target == "AVX3_DL";
        if (packed.empty() || packed.layout != PackedLayout::kFloatChunks) {
          EXPECT_TRUE(!x86 || (type != TensorType::kF32 && amx_bf16_active())) << target;
          continue;
        }
        // A tile of 4 columns of 16 lanes (AVX-512) or 2 of 8 (AVX2), zero-padded.
        const int64_t cols = target == "AVX2" ? 2 : 4, lanes = target == "AVX2" ? 8 : 16;
        const int64_t elem = type == TensorType::kF32 ? 4 : 2;
        EXPECT_EQ(packed.bytes,
                  static_cast<size_t>((n_out + cols - 1) / cols * cols * ((n_in + lanes - 1) / lanes) * lanes * elem));
        const auto x = random_floats(static_cast<size_t>(33 * n_in), 62);
        for (int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          for (int64_t rows : {1, 3, 4, 5, 16, 33}) {
            std::vector<float> want(static_cast<size_t>(rows * n_out)), got(want.size(), -1.0f);
            matmul(wm, x.data(), rows, want.data(), pool);
            matmul(wm, packed, x.data(), rows, got.data(), pool);
            ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
                << tensor_type_name(type) << " " << n_in << "x" << n_out << " rows " << rows << " threads "
                << threads << " on " << target;
          }
        }
      }
    }
  });
}

// Products of one input in one dispatch (packed Q8_0, Q4_0, Q4_K, Q5_K and
// Q6_K, plain Q8_0, Q4_0 and Q4_K, F16 as stored, packed F32 and BF16, and types without an unpacked integer
// kernel, Q5_K among them, widths off the 16-column grain): each output
// equals matmul() of its weights alone, bit for bit. Q4_0 and Q6_K together
// need both kinds of activation sums.
TEST(PackedWeights, GroupOfProductsMatchesEachAlone) {
  const int64_t n_in = 256;
  struct Kind {
    TensorType type;
    int64_t n_out;
    bool packed;
  };
  const Kind kinds[] = {
      {TensorType::kQ8_0, 40, true},  {TensorType::kQ4_0, 24, true}, {TensorType::kQ4_K, 33, true},
      {TensorType::kQ6_K, 20, true},  {TensorType::kQ8_0, 7, false}, {TensorType::kQ4_0, 9, false},
      {TensorType::kQ4_K, 33, false}, {TensorType::kF16, 19, false}, {TensorType::kQ5_1, 18, false},
      {TensorType::kQ5_K, 17, true},  {TensorType::kQ5_K, 12, false}, {TensorType::kF32, 21, true},
      {TensorType::kBF16, 19, true}};
  std::vector<std::vector<uint8_t>> data;
  std::vector<WeightMatrix> mats;
  for (const Kind& k : kinds) {
    data.push_back(random_weights(k.type, n_in, k.n_out, 40 + static_cast<int>(data.size())));
    mats.push_back({k.type, data.back().data(), n_in, k.n_out});
  }
  const auto x = random_floats(static_cast<size_t>(9 * n_in), 41);
  for_each_target([&] {
    ThreadPool pack_pool(2);
    std::vector<PackedWeights> packed;
    for (size_t i = 0; i < mats.size(); ++i)
      packed.push_back(kinds[i].packed ? pack_weights_always(mats[i], pack_pool) : PackedWeights{});
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
          matmul(mats[i], packed[i], x.data(), rows, want.data(), pool);
          ASSERT_EQ(std::memcmp(want.data(), got[i].data(), want.size() * sizeof(float)), 0)
              << "product " << i << " rows " << rows << " threads " << threads;
        }
      }
    }
  });
}

TEST(PackedWeights, WhichTypesPackAndOtherTargetsFallBack) {
  ThreadPool pool(2);
  const bool vnni = active_target_name() == "AVX3_DL";
  for (TensorType type : {TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kQ4_1}) {
    const auto w = random_weights(type, 256, 16, 3);
    EXPECT_TRUE(pack_weights_always({type, w.data(), 256, 16}, pool).empty()) << tensor_type_name(type);
  }
  // Float weights pack on the x86 vector targets (for AMX-BF16 tiles where
  // those are active: amx_test.cc).
  const std::string target = active_target_name();
  const bool x86 = target == "AVX2" || target == "AVX3" || target == "AVX3_DL";
  for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kBF16}) {
    const auto w = random_weights(type, 256, 16, 3);
    EXPECT_EQ(!pack_weights_always({type, w.data(), 256, 16}, pool).empty(),
              x86 || (type != TensorType::kF32 && amx_bf16_active()))
        << tensor_type_name(type);
  }
  for (TensorType type : {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K, TensorType::kQ5_K,
                          TensorType::kQ6_K, TensorType::kF32, TensorType::kF16}) {
    SCOPED_TRACE(tensor_type_name(type));
    // Packed for the best target, then used while dispatch is forced to the
    // last (portable) one: falls back to that target's own kernel (for Q5_K,
    // the dequantizing path).
    const auto q = random_weights(type, 256, 16, 4);
    const WeightMatrix wm{type, q.data(), 256, 16};
    const PackedWeights packed = pack_weights_always(wm, pool);
    const bool is_float = type == TensorType::kF32 || type == TensorType::kF16;
    EXPECT_EQ(!packed.empty(), is_float ? x86 || amx_bf16_active() : vnni);
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

// ---- Q4_K, Q5_K and Q6_K: within the reference bound, and batch invariant ----

// Every integer kernel's bound against matmul_reference (ops_test_util.h).
double error_bound(const float* w, const float* x, int64_t n_in) {
  return testing::matmul_error_bound(true, w, x, n_in);
}

// y (rows x n_out) within error_bound of matmul_reference.
void expect_near_reference(const WeightMatrix& wm, const std::vector<float>& x, int64_t rows,
                           const std::vector<float>& y) {
  const auto wf = dequantized(wm.type, static_cast<const uint8_t*>(wm.data), wm.n_in, wm.n_out);
  std::vector<float> ref(static_cast<size_t>(rows * wm.n_out));
  matmul_reference(wm, x.data(), rows, ref.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < wm.n_out; ++o) {
      const double bound = error_bound(wf.data() + o * wm.n_in, x.data() + r * wm.n_in, wm.n_in);
      ASSERT_NEAR(y[r * wm.n_out + o], ref[r * wm.n_out + o], bound) << "row " << r << " out " << o;
    }
  }
}

struct KShape {
  int64_t n_in, n_out;
};
// 512x33: a short last column group.
const KShape kKShapes[] = {{256, 40}, {768, 16}, {512, 33}};
const TensorType kKTypes[] = {TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K};

TEST(PackedWeights, KQuantsMatchReferenceOnEveryTarget) {
  for (TensorType type : kKTypes) {
    for (const KShape& s : kKShapes) {
      SCOPED_TRACE(std::string(tensor_type_name(type)) + " " + std::to_string(s.n_in) + "x" +
                   std::to_string(s.n_out));
      const auto w = random_weights(type, s.n_in, s.n_out, static_cast<uint32_t>(s.n_in + s.n_out));
      const WeightMatrix wm{type, w.data(), s.n_in, s.n_out};
      // Activations with varied magnitudes per block, like real hidden states.
      auto x = random_floats(static_cast<size_t>(33 * s.n_in), 7);
      for (size_t i = 0; i < x.size(); ++i) x[i] *= 1.0f + static_cast<float>((i / 32) % 5);
      for_each_target([&] {
        ThreadPool pack_pool(2);
        const PackedWeights packed = pack_weights_always(wm, pack_pool);
        EXPECT_EQ(!packed.empty(), active_target_name() == "AVX3_DL");
        if (!packed.empty()) {
          // One unit per 16 columns x 256: Q4_K 2368 bytes (its own 2304),
          // Q5_K 2880 (its own 2816), Q6_K 3392 (its own 3360).
          const size_t unit = type == TensorType::kQ4_K ? 2368 : type == TensorType::kQ5_K ? 2880 : 3392;
          EXPECT_EQ(packed.bytes, static_cast<size_t>((s.n_out + 15) / 16 * (s.n_in / 256)) * unit);
        }
        for (int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          for (int64_t rows : {1, 3, 4, 16, 33}) {
            SCOPED_TRACE("rows " + std::to_string(rows) + " threads " + std::to_string(threads));
            std::vector<float> y(static_cast<size_t>(rows * s.n_out), NAN);
            matmul(wm, packed, x.data(), rows, y.data(), pool);
            expect_near_reference(wm, x, rows, y);
          }
        }
      });
    }
  }
}

// Bit-exact batch invariance of the packed kernels: every row's output is the
// same alone, as the first rows of any batch up to 33, inside chunks, at 1, 2
// and 3 threads.
TEST(PackedWeights, KQuantsBatchInvariantBitExact) {
  constexpr int64_t kRows = 33;
  for (TensorType type : kKTypes) {
    for (const KShape& s : kKShapes) {
      SCOPED_TRACE(std::string(tensor_type_name(type)) + " " + std::to_string(s.n_in) + "x" +
                   std::to_string(s.n_out));
      const auto w = random_weights(type, s.n_in, s.n_out, 21);
      const WeightMatrix wm{type, w.data(), s.n_in, s.n_out};
      const auto x = random_floats(static_cast<size_t>(kRows * s.n_in), 22);
      for_each_target([&] {
        ThreadPool pack_pool(2);
        const PackedWeights packed = pack_weights_always(wm, pack_pool);
        std::vector<float> full(static_cast<size_t>(kRows * s.n_out));
        matmul(wm, packed, x.data(), kRows, full.data(), pack_pool);
        const size_t row_bytes_out = static_cast<size_t>(s.n_out) * sizeof(float);
        for (int threads : {1, 2, 3}) {
          SCOPED_TRACE("threads " + std::to_string(threads));
          ThreadPool pool(threads);
          for (int64_t r = 0; r < kRows; ++r) {
            std::vector<float> y(static_cast<size_t>(s.n_out));
            matmul(wm, packed, x.data() + r * s.n_in, 1, y.data(), pool);
            ASSERT_EQ(std::memcmp(y.data(), full.data() + r * s.n_out, row_bytes_out), 0) << "row " << r;
          }
          for (int64_t b = 2; b <= kRows; ++b) {
            std::vector<float> y(static_cast<size_t>(b * s.n_out));
            matmul(wm, packed, x.data(), b, y.data(), pool);
            ASSERT_EQ(std::memcmp(y.data(), full.data(), y.size() * sizeof(float)), 0) << "batch " << b;
          }
          std::vector<float> y(full.size());
          int64_t r = 0;
          for (int64_t c : {3, 1, 5, 8, 2, 4, 10}) {
            matmul(wm, packed, x.data() + r * s.n_in, c, y.data() + r * s.n_out, pool);
            r += c;
          }
          ASSERT_EQ(r, kRows);
          ASSERT_EQ(std::memcmp(y.data(), full.data(), y.size() * sizeof(float)), 0) << "chunked";
        }
      });
    }
  }
}

// Extreme codes: every Q4_K q 0 or 15 and every Q5_K q 0 or 31 with scales
// and mins 63, every Q6_K q 0 or 63 with scales -128 and 127, against
// activations of +-127 after quantization: the largest integer sums and
// offsets the kernels meet. Packed stays within the reference bound.
TEST(PackedWeights, KQuantsExtremesNearReference) {
  const int64_t n_in = 512, n_out = 20, rows = 5;
  std::vector<float> x(static_cast<size_t>(rows * n_in));
  for (size_t i = 0; i < x.size(); ++i) x[i] = i % 5 == 0 ? -1.0f : 1.0f;
  for (TensorType type : kKTypes) {
    SCOPED_TRACE(std::string(tensor_type_name(type)));
    const size_t rb = row_bytes(traits_of(type), static_cast<size_t>(n_in));
    std::vector<uint8_t> w(rb * n_out);
    for (int64_t o = 0; o < n_out; ++o) {
      for (int64_t sb = 0; sb < n_in / 256; ++sb) {
        const auto pick = [&](int i) { return (o + sb + i) % 3 == 0; };
        if (type == TensorType::kQ4_K) {
          auto* blk = reinterpret_cast<BlockQ4_K*>(w.data() + o * rb) + sb;
          blk->d = f32_to_f16(0.5f);
          blk->dmin = f32_to_f16(0.25f);
          std::fill(std::begin(blk->scales), std::end(blk->scales), uint8_t{0xFF});  // all 63
          for (int i = 0; i < 128; ++i) blk->qs[i] = pick(i) ? 0x0F : 0xF0;
        } else if (type == TensorType::kQ5_K) {
          // qs[32k + l] holds element l of sub-blocks 2k (low nibble) and
          // 2k+1 (high); qh[l] bits 2k and 2k+1 their high bits, set to match
          // so that every q is 0 or 31.
          auto* blk = reinterpret_cast<BlockQ5_K*>(w.data() + o * rb) + sb;
          blk->d = f32_to_f16(0.5f);
          blk->dmin = f32_to_f16(0.25f);
          std::fill(std::begin(blk->scales), std::end(blk->scales), uint8_t{0xFF});  // all 63
          std::fill(std::begin(blk->qh), std::end(blk->qh), uint8_t{0});
          for (int i = 0; i < 128; ++i) {
            blk->qs[i] = pick(i) ? 0x0F : 0xF0;
            blk->qh[i % 32] |= static_cast<uint8_t>((pick(i) ? 1 : 2) << (2 * (i / 32)));
          }
        } else {
          auto* blk = reinterpret_cast<BlockQ6_K*>(w.data() + o * rb) + sb;
          blk->d = f32_to_f16(0.5f);
          for (int g = 0; g < 16; ++g) blk->scales[g] = static_cast<int8_t>(g % 2 ? 127 : -128);
          for (int i = 0; i < 128; ++i) blk->ql[i] = pick(i) ? 0xFF : 0x00;
          for (int i = 0; i < 64; ++i) blk->qh[i] = pick(i + 1) ? 0xFF : 0x00;
        }
      }
    }
    const WeightMatrix wm{type, w.data(), n_in, n_out};
    for_each_target([&] {
      ThreadPool pool(2);
      const PackedWeights packed = pack_weights_always(wm, pool);
      for (int64_t r : {int64_t{1}, rows}) {
        std::vector<float> y(static_cast<size_t>(r * n_out), NAN);
        matmul(wm, packed, x.data(), r, y.data(), pool);
        expect_near_reference(wm, x, r, y);
      }
    });
  }
}

}  // namespace
}  // namespace ladder::ops
