#include "kv/block_key.h"

#include <cstring>
#include <vector>

#include "common/check.h"
#include "common/sha256.h"

namespace ladder::kv {

std::string BlockKey::hex() const { return to_hex(bytes); }

size_t BlockKeyHash::operator()(const BlockKey& key) const {
  // The key is already a uniform digest: its first bytes are a fine hash.
  size_t h;
  std::memcpy(&h, key.bytes.data(), sizeof(h));
  return h;
}

BlockKey namespace_digest(const CacheNamespace& ns) {
  Sha256 sha;
  sha.update_str("ladder.kv.namespace.v1");
  sha.update_str(ns.tenant_scope);
  sha.update_str(ns.model_digest);
  sha.update_str(ns.tokenizer_digest);
  sha.update_str(ns.kv_format);
  return BlockKey{sha.finish()};
}

BlockKey chain_key(const BlockKey* parent, const BlockKey& ns_digest, std::span<const int32_t> tokens) {
  Sha256 sha;
  const uint8_t has_parent = parent != nullptr ? 1 : 0;
  sha.update(&has_parent, 1);
  if (parent != nullptr) sha.update(parent->bytes.data(), parent->bytes.size());
  sha.update(ns_digest.bytes.data(), ns_digest.bytes.size());
  sha.update_u64(tokens.size());
  for (int32_t t : tokens) sha.update_u64(static_cast<uint32_t>(t));
  return BlockKey{sha.finish()};
}

}  // namespace ladder::kv
