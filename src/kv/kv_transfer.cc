#include "kv/kv_transfer.h"

#include <fmt/format.h>

#include <cstring>

#include "common/check.h"
#include "kv/prefix_cache.h"

namespace ladder::kv {
namespace {

// Calls fn(pointer to the block in that layer side, its bytes) for every
// layer, K then V. The two sides' blocks differ in size in some formats (q4).
template <typename Fn>
void for_each_layer_block(const KvStorage& storage, BlockId id, Fn&& fn) {
  const KvShape& shape = storage.shape();
  LADDER_CHECK(id >= 0 && id < shape.n_blocks, "block id out of range");
  const ops::PagedKv& kv = storage.layers();
  for (size_t l = 0; l < kv.k.size(); ++l) {
    for (const ops::PagedKvLayer* layer : {&kv.k[l], &kv.v[l]}) {
      fn(layer->base + static_cast<size_t>(id) * layer->block_stride_bytes, layer->block_stride_bytes);
    }
  }
}

}  // namespace

std::span<const uint8_t> KvBlockSet::block(size_t i) const {
  LADDER_CHECK(i < keys.size() && data.size() == keys.size() * block_bytes, "block index outside the set");
  return std::span(data).subspan(i * block_bytes, block_bytes);
}

void read_block(const KvStorage& storage, BlockId id, std::span<uint8_t> out) {
  LADDER_CHECK(out.size() == storage.block_bytes(), "read_block needs exactly one block of room");
  size_t at = 0;
  for_each_layer_block(storage, id, [&](const uint8_t* p, size_t n) {
    std::memcpy(out.data() + at, p, n);
    at += n;
  });
  LADDER_CHECK(at == out.size(), "a block's layers add up to other than its bytes");
}

void write_block(const KvStorage& storage, BlockId id, std::span<const uint8_t> in) {
  LADDER_CHECK(in.size() == storage.block_bytes(), "write_block needs exactly one block of bytes");
  size_t at = 0;
  for_each_layer_block(storage, id, [&](uint8_t* p, size_t n) {
    std::memcpy(p, in.data() + at, n);
    at += n;
  });
  LADDER_CHECK(at == in.size(), "a block's layers add up to other than its bytes");
}

KvBlockSet export_blocks(const KvStorage& storage, std::span<const BlockId> table, const BlockKey& ns_digest,
                         std::span<const int32_t> tokens, int64_t first_block, int64_t n_blocks) {
  const int bs = storage.shape().block_size;
  LADDER_CHECK(first_block >= 0 && n_blocks >= 0, "a negative block range");
  LADDER_CHECK(first_block + n_blocks <= static_cast<int64_t>(table.size()), "export past the block table");
  LADDER_CHECK((first_block + n_blocks) * bs <= static_cast<int64_t>(tokens.size()),
               "export of a block that is not full");
  KvBlockSet set;
  set.ns_digest = ns_digest;
  set.shape = storage.shape();
  set.shape.n_blocks = 0;
  set.kv_format = storage.format_name();
  set.first_block = first_block;
  set.block_bytes = storage.block_bytes();
  std::vector<BlockKey> chain;
  PrefixCache::extend_keys(ns_digest, tokens.first(static_cast<size_t>((first_block + n_blocks) * bs)), bs,
                           chain);
  set.keys.assign(chain.begin() + first_block, chain.end());
  set.data.resize(static_cast<size_t>(n_blocks) * set.block_bytes);
  for (int64_t i = 0; i < n_blocks; ++i) {
    read_block(storage, table[static_cast<size_t>(first_block + i)],
               std::span(set.data).subspan(static_cast<size_t>(i) * set.block_bytes, set.block_bytes));
  }
  return set;
}

KvBlockSet drop_leading_blocks(const KvBlockSet& set, size_t n) {
  LADDER_CHECK(n <= set.n_blocks(), "dropping more blocks than the set holds");
  KvBlockSet out;
  out.ns_digest = set.ns_digest;
  out.kv_format = set.kv_format;
  out.shape = set.shape;
  out.first_block = set.first_block + static_cast<int64_t>(n);
  out.keys.assign(set.keys.begin() + static_cast<std::ptrdiff_t>(n), set.keys.end());
  out.block_bytes = set.block_bytes;
  out.data.assign(set.data.begin() + static_cast<std::ptrdiff_t>(n * set.block_bytes), set.data.end());
  out.model_digest = set.model_digest;
  out.tokenizer_digest = set.tokenizer_digest;
  return out;
}

Status check_block_set(const KvBlockSet& set, const KvShape& shape) {
  const KvShape& s = set.shape;
  if (s.n_layers != shape.n_layers || s.n_kv_heads != shape.n_kv_heads || s.head_dim != shape.head_dim ||
      s.block_size != shape.block_size || s.dtype != shape.dtype) {
    return invalid_argument(fmt::format(
        "KV blocks of shape (layers {}, kv heads {}, head dim {}, block size {}, {}) do not fit a cache of "
        "(layers {}, kv heads {}, head dim {}, block size {}, {})",
        s.n_layers, s.n_kv_heads, s.head_dim, s.block_size, tensor_type_name(s.dtype), shape.n_layers,
        shape.n_kv_heads, shape.head_dim, shape.block_size, tensor_type_name(shape.dtype)));
  }
  if (set.kv_format != kv_format_name(shape)) {
    return invalid_argument(fmt::format("KV blocks in format '{}' cannot go into a cache of format '{}'",
                                        set.kv_format, kv_format_name(shape)));
  }
  auto bytes = kv_block_bytes(shape);
  if (!bytes.is_ok()) return bytes.status();
  if (set.block_bytes != *bytes) {
    return invalid_argument(
        fmt::format("KV blocks of {} bytes each; this format's blocks have {}", set.block_bytes, *bytes));
  }
  if (set.data.size() != set.keys.size() * set.block_bytes) {
    return invalid_argument(fmt::format("a KV block set of {} blocks carries {} bytes, not {}",
                                        set.keys.size(), set.data.size(), set.keys.size() * set.block_bytes));
  }
  if (set.first_block < 0) return invalid_argument("a KV block set starts at a negative block");
  return Status::ok();
}

}  // namespace ladder::kv
