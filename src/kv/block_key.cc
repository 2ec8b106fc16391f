#include "kv/block_key.h"

#include <openssl/evp.h>

#include <cstring>
#include <vector>

#include "common/check.h"

namespace ladder::kv {
namespace {

// Incremental SHA-256 over little-endian fields.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) {
    LADDER_CHECK(ctx_ != nullptr, "EVP_MD_CTX_new failed");
    LADDER_CHECK(EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) == 1, "sha256 init failed");
  }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void bytes(const void* data, size_t n) {
    LADDER_CHECK(EVP_DigestUpdate(ctx_, data, n) == 1, "sha256 update failed");
  }
  void u64(uint64_t v) {
    uint8_t le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(v >> (8 * i));
    bytes(le, 8);
  }
  void str(std::string_view s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  BlockKey finish() {
    BlockKey key;
    unsigned int n = 0;
    LADDER_CHECK(EVP_DigestFinal_ex(ctx_, key.bytes.data(), &n) == 1 && n == 32, "sha256 final failed");
    return key;
  }

 private:
  EVP_MD_CTX* ctx_;
};

}  // namespace

std::string BlockKey::hex() const {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

size_t BlockKeyHash::operator()(const BlockKey& key) const {
  // The key is already a uniform digest: its first bytes are a fine hash.
  size_t h;
  std::memcpy(&h, key.bytes.data(), sizeof(h));
  return h;
}

BlockKey namespace_digest(const CacheNamespace& ns) {
  Sha256 sha;
  sha.str("ladder.kv.namespace.v1");
  sha.str(ns.tenant_scope);
  sha.str(ns.model_digest);
  sha.str(ns.tokenizer_digest);
  sha.str(ns.kv_format);
  return sha.finish();
}

BlockKey chain_key(const BlockKey* parent, const BlockKey& ns_digest, std::span<const int32_t> tokens) {
  Sha256 sha;
  const uint8_t has_parent = parent != nullptr ? 1 : 0;
  sha.bytes(&has_parent, 1);
  if (parent != nullptr) sha.bytes(parent->bytes.data(), parent->bytes.size());
  sha.bytes(ns_digest.bytes.data(), ns_digest.bytes.size());
  sha.u64(tokens.size());
  for (int32_t t : tokens) sha.u64(static_cast<uint32_t>(t));
  return sha.finish();
}

}  // namespace ladder::kv
