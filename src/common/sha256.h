// SHA-256 (OpenSSL underneath): the one digest every module uses -- model
// and tokenizer fingerprints, prefix-cache keys, API key comparison, workload
// and record digests.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ladder {

using Sha256Digest = std::array<uint8_t, 32>;

// Incremental digest; finish() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  Sha256& update(const void* data, size_t n);
  Sha256& update(std::string_view bytes) { return update(bytes.data(), bytes.size()); }
  // Little-endian u64, and a length-prefixed string (u64le length, bytes), so
  // that fields hashed one after another cannot run into each other.
  Sha256& update_u64(uint64_t v);
  Sha256& update_str(std::string_view s);
  Sha256Digest finish();

 private:
  void* ctx_;  // EVP_MD_CTX
};

Sha256Digest sha256(std::string_view bytes);
// Lowercase hex of a digest, or of its first `n_bytes` bytes.
std::string to_hex(const Sha256Digest& digest, size_t n_bytes = 32);
std::string sha256_hex(std::string_view bytes);

}  // namespace ladder
