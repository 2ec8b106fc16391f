#include "common/sha256.h"

#include <openssl/evp.h>

#include "common/check.h"

namespace ladder {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  LADDER_CHECK(ctx_ != nullptr, "EVP_MD_CTX_new failed");
  LADDER_CHECK(EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) == 1, "sha256 init failed");
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

Sha256& Sha256::update(const void* data, size_t n) {
  LADDER_CHECK(EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n) == 1, "sha256 update failed");
  return *this;
}

Sha256& Sha256::update_u64(uint64_t v) {
  uint8_t le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(v >> (8 * i));
  return update(le, 8);
}

Sha256& Sha256::update_str(std::string_view s) {
  update_u64(s.size());
  return update(s.data(), s.size());
}

Sha256Digest Sha256::finish() {
  Sha256Digest d{};
  unsigned int n = 0;
  LADDER_CHECK(EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), d.data(), &n) == 1 && n == 32,
               "sha256 final failed");
  return d;
}

Sha256Digest sha256(std::string_view bytes) { return Sha256().update(bytes).finish(); }

std::string to_hex(const Sha256Digest& digest, size_t n_bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n_bytes);
  for (size_t i = 0; i < n_bytes && i < digest.size(); ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) { return to_hex(sha256(bytes)); }

}  // namespace ladder
