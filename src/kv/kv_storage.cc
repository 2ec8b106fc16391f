#include "kv/kv_storage.h"

#include <fmt/format.h>

#include <sys/mman.h>

#include <cstring>
#include <utility>
#include <vector>

#include "common/page_memory.h"
#include "ops/kv_codec.h"

namespace ladder::kv {
namespace {

class ArenaKvStorage final : public KvStorage {
 public:
  // k_bytes, v_bytes: one block of one layer's K and V; slot_bytes: one
  // staging slot of one layer's K or V (0: unstaged format).
  // memory: zeroed, owned from here on.
  ArenaKvStorage(const KvShape& shape, size_t k_bytes, size_t v_bytes, size_t slot_bytes, PageMemory memory)
      : shape_(shape), slot_bytes_(slot_bytes), memory_(std::move(memory)) {
    uint8_t* const base = memory_.data();
    const auto n_blocks = static_cast<size_t>(shape.n_blocks);
    const size_t n_slots = slot_bytes == 0 ? 0 : static_cast<size_t>(shape.n_staging);
    uint8_t* staging = base + (k_bytes + v_bytes) * n_blocks * static_cast<size_t>(shape.n_layers);
    slot_of_.assign(n_blocks, -1);
    for (size_t i = n_slots; i > 0; --i) free_slots_.push_back(static_cast<int32_t>(i - 1));
    for (int l = 0; l < shape.n_layers; ++l) {
      for (int kv = 0; kv < 2; ++kv) {
        const size_t block_bytes = kv == 0 ? k_bytes : v_bytes;
        ops::PagedKvLayer layer;
        layer.base = base + static_cast<size_t>(l) * (k_bytes + v_bytes) * n_blocks +
                     (kv == 0 ? 0 : k_bytes * n_blocks);
        layer.block_stride_bytes = block_bytes;
        layer.block_size = shape.block_size;
        layer.n_kv_heads = shape.n_kv_heads;
        layer.head_dim = shape.head_dim;
        layer.dtype = shape.dtype;
        layer.layout = kv == 0 ? ops::KvLayout::kDimMajor : ops::KvLayout::kTokenMajor;
        if (n_slots > 0) {
          layer.staging =
              staging + (static_cast<size_t>(l) * 2 + static_cast<size_t>(kv)) * slot_bytes * n_slots;
          layer.staging_stride_bytes = slot_bytes;
          layer.staging_slot = slot_of_.data();
        }
        (kv == 0 ? layers_.k : layers_.v).push_back(layer);
      }
    }
  }

  const KvShape& shape() const override { return shape_; }
  const ops::PagedKv& layers() const override { return layers_; }

  void copy_block(BlockId from, BlockId to) override {
    LADDER_CHECK(from >= 0 && to >= 0 && from < shape_.n_blocks && to < shape_.n_blocks,
                 "block id out of range");
    if (from == to) return;
    const bool staging = is_staged(from) && is_staged(to);
    for (const auto* side : {&layers_.k, &layers_.v}) {
      for (const ops::PagedKvLayer& layer : *side) {
        const size_t n = layer.block_stride_bytes;
        std::memcpy(layer.base + static_cast<size_t>(to) * n, layer.base + static_cast<size_t>(from) * n, n);
        if (staging) std::memcpy(slot(layer, to), slot(layer, from), slot_bytes_);
      }
    }
  }

  int32_t n_free_staging() const override {
    if (slot_bytes_ == 0) return KvStorage::n_free_staging();
    return static_cast<int32_t>(free_slots_.size());
  }
  void stage(BlockId b) override {
    if (slot_bytes_ == 0) return;
    check_id(b);
    LADDER_CHECK(slot_of_[static_cast<size_t>(b)] < 0, "KV block is already staged");
    LADDER_CHECK(!free_slots_.empty(), "no free KV staging slot");
    slot_of_[static_cast<size_t>(b)] = free_slots_.back();
    free_slots_.pop_back();
    for (const auto* side : {&layers_.k, &layers_.v}) {
      for (const ops::PagedKvLayer& layer : *side) std::memset(slot(layer, b), 0, slot_bytes_);
    }
  }
  void unstage(BlockId b) override {
    if (slot_bytes_ == 0) return;
    check_id(b);
    LADDER_CHECK(slot_of_[static_cast<size_t>(b)] >= 0, "KV block is not staged");
    free_slots_.push_back(slot_of_[static_cast<size_t>(b)]);
    slot_of_[static_cast<size_t>(b)] = -1;
  }
  bool is_staged(BlockId b) const override {
    check_id(b);
    return slot_of_[static_cast<size_t>(b)] >= 0;
  }
  void unseal(BlockId b) override {
    LADDER_CHECK(is_staged(b), "unseal of a KV block without a staging slot");
    for (const auto* side : {&layers_.k, &layers_.v}) {
      for (const ops::PagedKvLayer& layer : *side) ops::kv_unseal_block_q4(layer, b);
    }
  }

 private:
  void check_id(BlockId b) const { LADDER_CHECK(b >= 0 && b < shape_.n_blocks, "block id out of range"); }
  uint8_t* slot(const ops::PagedKvLayer& layer, BlockId b) const {
    return layer.staging + static_cast<size_t>(slot_of_[static_cast<size_t>(b)]) * slot_bytes_;
  }

  KvShape shape_;
  size_t slot_bytes_;
  std::vector<int32_t> slot_of_;     // [n_blocks] staging slot of each block, -1: none
  std::vector<int32_t> free_slots_;  // a stack
  PageMemory memory_;
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
  LADDER_ASSIGN_OR_RETURN(size_t k_bytes, kv_layer_block_bytes(shape));
  LADDER_ASSIGN_OR_RETURN(size_t v_bytes, kv_layer_block_bytes_v(shape));
  LADDER_ASSIGN_OR_RETURN(size_t total, kv_storage_bytes(shape));
  if (total > max_bytes) {
    return out_of_range(fmt::format("KV storage of {} blocks x {} layers does not fit the limit of {} bytes",
                                    shape.n_blocks, shape.n_layers, max_bytes));
  }
  // Zeroed so that reading an unwritten slot is deterministic (it never
  // should be): mapped, not allocated and cleared, so nothing is written (or
  // made resident) until a block is used. A pool of hundreds of MiB then
  // starts at once (clearing it took most of a server's start-up, and ~4 s
  // of it under ThreadSanitizer, which shadows every byte written).
  PageMemory memory = PageMemory::map(total, PageMemory::Pages::kSmall);
  if (memory.empty()) return resource_exhausted(fmt::format("cannot allocate {} bytes of KV storage", total));
  const size_t slot_bytes =
      ops::kv_layer_staging_bytes(shape.dtype, shape.block_size, shape.n_kv_heads, shape.head_dim);
  return std::unique_ptr<KvStorage>(
      new ArenaKvStorage(shape, k_bytes, v_bytes, slot_bytes, std::move(memory)));
}

}  // namespace ladder::kv
