// Parser: turns untrusted GGUF bytes into a GgufFile (internal to gguf/).
// Every read is bounds-checked against the bytes left; every count is checked
// against those bytes and a sane limit before anything is allocated.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "gguf/gguf_file.h"

namespace ladder::gguf {

// Limits beyond "fits in the file": they stop a small hostile file from
// asking for deep recursion or many times its size in memory.
inline constexpr uint64_t kMaxKeyBytes = 65535;  // GGUF keys are short ASCII paths
inline constexpr uint64_t kMaxTensorNameBytes = 65535;
inline constexpr uint64_t kMaxStringBytes = 256ull << 20;  // chat templates are kilobytes
// An array item costs ~48 bytes in memory however few it takes on disk, so
// item counts are capped per array and per file (vocabularies and merge
// lists are ~10^5..10^6 items).
inline constexpr uint64_t kMaxArrayElements = 1ull << 24;
inline constexpr uint64_t kMaxMetadataItems = 1ull << 25;
inline constexpr uint64_t kMaxMetadataEntries = 1ull << 20;
inline constexpr uint64_t kMaxTensors = 1ull << 20;
inline constexpr int kMaxArrayDepth = 8;  // arrays of arrays of ...

class Parser {
 public:
  // Fills `file` (bytes_, version_, metadata_, tensors_, ...) from `bytes`,
  // which must outlive it.
  static Status parse_into(std::span<const uint8_t> bytes, GgufFile& file);

 private:
  Parser(std::span<const uint8_t> bytes, GgufFile& file) : bytes_(bytes), file_(file) {}
  Status run();
  uint64_t remaining() const { return bytes_.size() - pos_; }

  // "gguf: <ctx><items> <field> at byte <at>: <msg>"
  Status fail(std::string_view field, uint64_t at, std::string_view msg,
              StatusCode code = StatusCode::kInvalidArgument) const {
    std::string where = ctx_;
    for (uint64_t i : item_path_) where += fmt::format(" item {}", i);
    return Status(code, fmt::format("gguf: {} {} at byte {}: {}", where, field, at, msg));
  }
  Status need(uint64_t n, std::string_view field) const {
    if (remaining() < n) {
      return fail(field, pos_, fmt::format("needs {} bytes, only {} left in the file", n, remaining()));
    }
    return Status::ok();
  }
  template <typename T>
  Status read_le(T& out, std::string_view field) {
    LADDER_RETURN_IF_ERROR(need(sizeof(T), field));
    std::memcpy(&out, bytes_.data() + pos_, sizeof(T));  // host is little-endian (x86-64, arm64)
    pos_ += sizeof(T);
    return Status::ok();
  }
  Status read_string(std::string& out, std::string_view field, uint64_t max_len);
  Status read_value_type(ValueType& out, std::string_view field);
  Status read_value(ValueType t, Value& out, int depth);
  Status read_header(uint64_t& n_tensors, uint64_t& n_kv);
  Status read_metadata(uint64_t n_kv);
  Status read_tensor_infos(uint64_t n_tensors, std::vector<uint64_t>& offset_positions);
  Status resolve_alignment();
  Status place_tensors(const std::vector<uint64_t>& offset_positions);

  std::span<const uint8_t> bytes_;
  GgufFile& file_;
  uint64_t pos_ = 0;
  std::string ctx_ = "header";
  std::vector<uint64_t> item_path_;        // indices into nested arrays, for messages
  std::vector<uint64_t> value_positions_;  // byte offset of each metadata value
  uint64_t metadata_items_ = 0;            // array items read so far, all arrays together
};

}  // namespace ladder::gguf
