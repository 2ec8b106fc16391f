// BlockKey: the identity of one full block of cached KV. A SHA-256 over
//   parent key | namespace digest | block tokens
// where the namespace digest covers the tenant cache scope, the model file
// digest, the tokenizer digest and the KV format (DESIGN.md invariant 2). A
// cryptographic hash means two tenants' blocks cannot collide by accident.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace ladder::kv {

struct BlockKey {
  std::array<uint8_t, 32> bytes{};  // SHA-256 digest

  bool operator==(const BlockKey&) const = default;
  std::string hex() const;
};

struct BlockKeyHash {
  size_t operator()(const BlockKey& key) const;
};

// What, besides the tokens, a cached block depends on. Sharing happens only
// between requests whose four fields are all equal.
struct CacheNamespace {
  std::string tenant_scope;  // set by the server from the API key
  std::string model_digest;  // e.g. sha256 of the model file
  std::string tokenizer_digest;
  std::string kv_format;  // KvStorage::format_name(): dtype and block size
};

// sha256 of str("ladder.kv.namespace.v1") str(scope) str(model) str(tokenizer)
// str(kv_format), where str(s) = u64le(len) bytes (lengths keep "ab"+"c"
// apart from "a"+"bc").
BlockKey namespace_digest(const CacheNamespace& ns);

// Key of a block given its parent's key (nullptr for the first block):
// sha256 of u8(has parent) [parent 32 bytes] ns_digest u64le(n_tokens)
// u64le(uint32(token))...
BlockKey chain_key(const BlockKey* parent, const BlockKey& ns_digest, std::span<const int32_t> tokens);

}  // namespace ladder::kv
