// KvStorage: where the bytes of the paged KV cache live, kept apart from the
// block metadata (BlockPool, KvCacheManager). A block id indexes the same
// slot in every layer's K and V. The model reads storage only through the
// ops::PagedKv view, so any implementation that can hand out that view (one
// arena in host memory today) plugs in behind the KvCacheManager.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
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
  // (In a staged format this copies the staging slot too when both blocks
  // have one.)
  virtual void copy_block(BlockId from, BlockId to) = 0;

  // Staged formats (q4, see ops/kv_codec.h): a partly filled block keeps its
  // tokens in an F16 staging slot until it fills and is sealed. The defaults
  // are those of a storage without staged formats.
  // Free staging slots (unstaged formats: unlimited).
  virtual int32_t n_free_staging() const { return std::numeric_limits<int32_t>::max(); }
  // Gives a block a zeroed staging slot (one must be free) / returns it.
  virtual void stage(BlockId) {}
  virtual void unstage(BlockId) {}
  virtual bool is_staged(BlockId) const { return false; }
  // Refills a staged block's slot from its sealed, quantized bytes (a block
  // cut back to partly filled; lossy).
  virtual void unseal(BlockId) {}

  std::string format_name() const { return kv_format_name(shape()); }
  // Bytes of one block in all layers, K and V.
  size_t block_bytes() const;
};

// All blocks in one aligned, zeroed allocation:
//   [n_layers][K, V][n_blocks][block bytes], then in a staged format
//   [n_layers][K, V][n_staging][staging slot bytes].
// Errors: a bad shape (validate_kv_shape), a total that overflows or exceeds
// max_bytes (kOutOfRange), an allocation that fails (kResourceExhausted).
Result<std::unique_ptr<KvStorage>> make_arena_storage(const KvShape& shape, size_t max_bytes = SIZE_MAX);

}  // namespace ladder::kv
