#include "kv/kv_storage.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <limits>

namespace ladder::kv {
namespace {

constexpr size_t kAlignment = 64;

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

class ArenaKvStorage final : public KvStorage {
 public:
  ArenaKvStorage(const KvShape& shape, size_t layer_block_bytes, uint8_t* memory)
      : shape_(shape), layer_block_bytes_(layer_block_bytes), memory_(memory) {
    const size_t layer_bytes = layer_block_bytes * static_cast<size_t>(shape.n_blocks);
    for (int l = 0; l < shape.n_layers; ++l) {
      for (int kv = 0; kv < 2; ++kv) {
        ops::PagedKvLayer layer;
        layer.base = memory + (static_cast<size_t>(l) * 2 + static_cast<size_t>(kv)) * layer_bytes;
        layer.block_stride_bytes = layer_block_bytes;
        layer.block_size = shape.block_size;
        layer.n_kv_heads = shape.n_kv_heads;
        layer.head_dim = shape.head_dim;
        layer.dtype = shape.dtype;
        layer.layout = kv == 0 ? ops::KvLayout::kDimMajor : ops::KvLayout::kTokenMajor;
        (kv == 0 ? layers_.k : layers_.v).push_back(layer);
      }
    }
  }

  const KvShape& shape() const override { return shape_; }
  const ops::PagedKv& layers() const override { return layers_; }

  void copy_block(BlockId from, BlockId to) override {
    LADDER_CHECK(from >= 0 && to >= 0 && from < shape_.n_blocks && to < shape_.n_blocks, "block id out of range");
    if (from == to) return;
    for (const auto* side : {&layers_.k, &layers_.v}) {
      for (const ops::PagedKvLayer& layer : *side) {
        std::memcpy(layer.base + static_cast<size_t>(to) * layer_block_bytes_,
                    layer.base + static_cast<size_t>(from) * layer_block_bytes_, layer_block_bytes_);
      }
    }
  }

 private:
  KvShape shape_;
  size_t layer_block_bytes_;
  std::unique_ptr<uint8_t, FreeDeleter> memory_;
  ops::PagedKv layers_;
};

}  // namespace

size_t KvStorage::block_bytes() const {
  auto b = kv_block_bytes(shape());
  LADDER_CHECK(b.is_ok(), "a storage's shape was validated when it was made");
  return *b;
}

Result<std::unique_ptr<KvStorage>> make_arena_storage(const KvShape& shape, size_t max_bytes) {
  LADDER_RETURN_IF_ERROR(validate_kv_shape(shape, true));
  LADDER_ASSIGN_OR_RETURN(size_t block, kv_layer_block_bytes(shape));
  LADDER_ASSIGN_OR_RETURN(size_t all_layers, kv_block_bytes(shape));
  const auto n_blocks = static_cast<size_t>(shape.n_blocks);
  if (all_layers != 0 && n_blocks > std::numeric_limits<size_t>::max() / all_layers) {
    return out_of_range(fmt::format("KV storage of {} blocks x {} layers overflows", shape.n_blocks, shape.n_layers));
  }
  const size_t total = all_layers * n_blocks;
  if (total > max_bytes) {
    return out_of_range(fmt::format("KV storage of {} blocks x {} layers does not fit the limit of {} bytes",
                                    shape.n_blocks, shape.n_layers, max_bytes));
  }
  const size_t rounded = (total + kAlignment - 1) / kAlignment * kAlignment;
  auto* raw = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, rounded));
  if (raw == nullptr) return resource_exhausted(fmt::format("cannot allocate {} bytes of KV storage", rounded));
  // Zeroed so that reading an unwritten slot is deterministic (it never should be).
  std::memset(raw, 0, rounded);
  return std::unique_ptr<KvStorage>(new ArenaKvStorage(shape, block, raw));
}

}  // namespace ladder::kv
