#include "kv/kv_storage.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace ladder::kv::storage_test {
namespace {

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

TEST(KvStorage, LayoutOfEveryLayer) {
  KvShape shape{.n_layers = 3,
                .n_kv_heads = 2,
                .head_dim = 8,
                .block_size = 16,
                .n_blocks = 5,
                .dtype = TensorType::kF16};
  auto s = make_arena_storage(shape);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const KvStorage& kv = **s;
  const size_t block = 16 * 2 * 8 * 2;  // [block_size][n_kv_heads][head_dim] of f16
  EXPECT_EQ(kv.block_bytes(), block * 3 * 2);
  EXPECT_EQ(kv.format_name(), "f16-b16-kt");
  ASSERT_EQ(kv.layers().k.size(), 3u);
  ASSERT_EQ(kv.layers().v.size(), 3u);
  const uint8_t* base = kv.layers().k[0].base;
  for (int l = 0; l < 3; ++l) {
    const auto& k = kv.layers().k[static_cast<size_t>(l)];
    const auto& v = kv.layers().v[static_cast<size_t>(l)];
    EXPECT_EQ(k.block_stride_bytes, block);
    EXPECT_EQ(k.block_size, 16);
    EXPECT_EQ(k.n_kv_heads, 2);
    EXPECT_EQ(k.head_dim, 8);
    EXPECT_EQ(k.layout, ops::KvLayout::kDimMajor);  // keys transposed within a block
    EXPECT_EQ(v.layout, ops::KvLayout::kTokenMajor);
    EXPECT_EQ(k.dtype, TensorType::kF16);
    // K and V of every layer are disjoint consecutive regions of n_blocks blocks.
    EXPECT_EQ(k.base, base + static_cast<size_t>(2 * l) * 5 * block);
    EXPECT_EQ(v.base, k.base + 5 * block);
  }
  EXPECT_EQ(*kv_blocks_that_fit(shape, block * 2 * 3 * 7 + 1), 7);
}

TEST(KvStorage, CopyBlockCopiesEveryLayerKAndV) {
  KvShape shape{.n_layers = 2, .n_kv_heads = 1, .head_dim = 4, .block_size = 2, .n_blocks = 3,
                .dtype = TensorType::kF32};
  auto s = make_arena_storage(shape);
  ASSERT_TRUE(s.is_ok());
  KvStorage& kv = **s;
  const size_t block = kv.layers().k[0].block_stride_bytes;
  for (const auto* side : {&kv.layers().k, &kv.layers().v}) {
    for (size_t l = 0; l < side->size(); ++l) {
      for (size_t i = 0; i < block; ++i) (*side)[l].base[block + i] = static_cast<uint8_t>(l * 31 + i + 1);
    }
  }
  kv.copy_block(1, 2);
  for (const auto* side : {&kv.layers().k, &kv.layers().v}) {
    for (size_t l = 0; l < side->size(); ++l) {
      for (size_t i = 0; i < block; ++i) {
        EXPECT_EQ((*side)[l].base[2 * block + i], static_cast<uint8_t>(l * 31 + i + 1));
        EXPECT_EQ((*side)[l].base[i], 0);  // block 0 untouched
      }
    }
  }
}

TEST(KvStorage, APoolIsZeroAndTakesNoMemoryUntilWritten) {
  // 1 GiB of F32 blocks (64 KiB per layer's K or V block).
  KvShape shape{.n_layers = 4, .n_kv_heads = 8, .head_dim = 128, .block_size = 16, .n_blocks = 2048,
                .dtype = TensorType::kF32};
  const int64_t before = resident_bytes();
  auto s = make_arena_storage(shape);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  // Clearing it at creation would make all of it resident.
  EXPECT_LT(resident_bytes() - before, int64_t{64} << 20);
  KvStorage& kv = **s;
  const size_t block = kv.layers().k[0].block_stride_bytes;
  for (const auto* side : {&kv.layers().k, &kv.layers().v}) {
    for (const ops::PagedKvLayer& layer : *side) {
      for (size_t b : {size_t{0}, size_t{1023}, size_t{2047}}) {
        const uint8_t* p = layer.base + b * block;
        EXPECT_EQ(p[0], 0);
        EXPECT_EQ(p[block / 2], 0);
        EXPECT_EQ(p[block - 1], 0);
      }
    }
  }
  kv.layers().v[3].base[2047 * block + block - 1] = 7;  // the arena's last byte is writable
}

TEST(KvStorage, RejectsBadShapes) {
  KvShape bad{.n_layers = 1, .n_kv_heads = 1, .head_dim = 4, .block_size = 16, .n_blocks = 0};
  EXPECT_EQ(make_arena_storage(bad).status().code(), StatusCode::kInvalidArgument);
  bad.n_blocks = 2;
  bad.dtype = TensorType::kQ4_K;
  EXPECT_EQ(make_arena_storage(bad).status().code(), StatusCode::kUnimplemented);
  bad.dtype = TensorType::kF32;
  EXPECT_EQ(make_arena_storage(bad, 100).status().code(), StatusCode::kOutOfRange);
  bad.n_blocks = INT32_MAX;
  bad.head_dim = INT32_MAX;
  bad.n_kv_heads = INT32_MAX;
  EXPECT_EQ(make_arena_storage(bad).status().code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace ladder::kv::storage_test
