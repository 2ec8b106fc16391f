// KvStorage: the bytes of the paged KV cache, all layers, allocated once.
// Kept apart from the block metadata (BlockPool): a block id indexes the same
// slot in every layer's K and V arrays. Produces one ops::PagedKvLayer per
// layer for K and for V (the engine wraps them into model::KvBuffers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/tensor_type.h"
#include "ops/attention.h"

namespace ladder::kv {

struct KvShape {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int block_size = 16;
  int32_t n_blocks = 0;
  TensorType dtype = TensorType::kF32;  // kF32 or kF16
};

class KvStorage {
 public:
  // Errors: a non-positive size, a dtype other than F32/F16, or a total that
  // overflows / exceeds max_bytes.
  static Result<std::unique_ptr<KvStorage>> create(const KvShape& shape, size_t max_bytes = SIZE_MAX);

  // Bytes of one block of one layer's K (or V): block_size x n_kv_heads x head_dim
  // elements, ordered as ops::KvLayout says (K dim-major, V token-major).
  static Result<size_t> block_bytes(const KvShape& shape);
  // How many blocks fit in `bytes` for all layers, K and V (n_blocks ignored).
  static Result<int32_t> blocks_that_fit(const KvShape& shape, size_t bytes);

  const KvShape& shape() const { return shape_; }
  size_t total_bytes() const { return total_bytes_; }
  // "f32-b16": part of every prefix-cache key, so blocks of one format are
  // never read as another.
  std::string format_name() const;

  const std::vector<ops::PagedKvLayer>& k_layers() const { return k_; }  // [n_layers]
  const std::vector<ops::PagedKvLayer>& v_layers() const { return v_; }  // [n_layers]

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  KvStorage() = default;
  KvShape shape_;
  size_t total_bytes_ = 0;
  // [n_layers][2 (K, V)][n_blocks][block bytes]
  std::unique_ptr<uint8_t, FreeDeleter> memory_;
  std::vector<ops::PagedKvLayer> k_;
  std::vector<ops::PagedKvLayer> v_;
};

}  // namespace ladder::kv
