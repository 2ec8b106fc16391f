// KvStorage: where the bytes of the paged KV cache live, kept apart from the
// block metadata (BlockPool, KvCacheManager). A block id indexes the same
// slot in every layer's K and V. The model reads storage only through the
// ops::PagedKv view, so any implementation that can hand out that view (one
// arena in host memory today) plugs in behind the KvCacheManager.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "kv/block_pool.h"
#include "kv/kv_format.h"
#include "ops/paged_kv.h"

namespace ladder::kv {

class KvStorage {
 public:
  virtual ~KvStorage() = default;

  virtual const KvShape& shape() const = 0;
  // The model's view: [n_layers] paged K and V layers.
  virtual const ops::PagedKv& layers() const = 0;
  // Copies block `from` into block `to` in every layer, K and V (a forked
  // sequence gets its own copy of a shared, partly filled block).
  virtual void copy_block(BlockId from, BlockId to) = 0;

  std::string format_name() const { return kv_format_name(shape()); }
  // Bytes of one block in all layers, K and V.
  size_t block_bytes() const;
};

// All blocks in one aligned, zeroed allocation:
//   [n_layers][K, V][n_blocks][block bytes].
// Errors: a bad shape (validate_kv_shape), a total that overflows or exceeds
// max_bytes (kOutOfRange), an allocation that fails (kResourceExhausted).
Result<std::unique_ptr<KvStorage>> make_arena_storage(const KvShape& shape, size_t max_bytes = SIZE_MAX);

}  // namespace ladder::kv
