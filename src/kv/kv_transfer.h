// KvBlockSet: full blocks of one sequence's KV lifted out of one worker's
// pool to be placed in another's (rung 2: a prefill worker computes a
// prompt, a decode worker continues it). Blocks travel with their prefix-
// cache keys, so the receiver takes a block only when its key equals the key
// it computes itself for the same position of its own request: same tokens,
// same tenant cache scope, model, tokenizer and KV format (DESIGN.md
// invariant 2 holds in transfer too). The bytes of a block are described by
// its KvShape and format alone, so any format the storage holds transfers.
//
// A block's bytes, as exported: for each layer in order, its K block
// (kv_layer_block_bytes(shape) long) then its V block
// (kv_layer_block_bytes_v(shape): the same but in q4), exactly as the
// storage keeps them (no conversion; the receiver must use the same format).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "kv/block_key.h"
#include "kv/block_pool.h"
#include "kv/kv_format.h"
#include "kv/kv_storage.h"

namespace ladder::kv {

struct KvBlockSet {
  BlockKey ns_digest;          // the sender's namespace digest (keys decide; this is for diagnostics)
  std::string kv_format;       // kv_format_name(shape)
  KvShape shape;               // n_blocks unused
  int64_t first_block = 0;     // chain position of keys[0]
  std::vector<BlockKey> keys;  // [n] chain keys of blocks first_block, first_block + 1, ...
  size_t block_bytes = 0;      // kv_block_bytes(shape)
  std::vector<uint8_t> data;   // [n][block_bytes]
  // Provenance, so a mismatch is reported by name rather than by key.
  std::string model_digest;
  std::string tokenizer_digest;

  size_t n_blocks() const { return keys.size(); }
  std::span<const uint8_t> block(size_t i) const;
};

// Copies block `id` of every layer, K then V, into out (storage.block_bytes()).
void read_block(const KvStorage& storage, BlockId id, std::span<uint8_t> out);
// Writes such bytes into block `id` of every layer.
void write_block(const KvStorage& storage, BlockId id, std::span<const uint8_t> in);

// The full blocks [first_block, first_block + n_blocks) of a sequence whose
// block table is `table` and whose KV of those positions is written; keys
// are chained from `tokens` (the sequence's tokens, at least through the last
// exported block) under ns_digest. Checked: the range lies in the table and
// in the tokens' full blocks.
KvBlockSet export_blocks(const KvStorage& storage, std::span<const BlockId> table, const BlockKey& ns_digest,
                         std::span<const int32_t> tokens, int64_t first_block, int64_t n_blocks);

// The set without its first n blocks (what a receiver already holds): it
// starts at first_block + n. n may be up to n_blocks (an empty set).
KvBlockSet drop_leading_blocks(const KvBlockSet& set, size_t n);

// Whether a set can be written into storage of `shape`: the same element
// layout (layers, heads, head dim, block size, dtype), format name and block
// bytes, and data sized n_blocks x block_bytes. kInvalidArgument naming what
// differs.
Status check_block_set(const KvBlockSet& set, const KvShape& shape);

}  // namespace ladder::kv
