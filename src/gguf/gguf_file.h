// GgufFile: a memory-mapped GGUF v2/v3 file (or an in-memory buffer), parsed
// without trusting a single byte of it. Every count, length, offset and shape
// is checked against the file size and sane limits before use; a malformed
// file yields a Status naming the field and its byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/tensor_type.h"
#include "gguf/gguf_value.h"

namespace ladder::gguf {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr int kMaxDims = 4;

struct TensorInfo {
  std::string name;
  TensorType type = TensorType::kF32;
  // ggml order: shape[0] is the innermost (contiguous) dimension, i.e. the row
  // length; a weight [n_out][n_in] has shape {n_in, n_out}.
  std::vector<uint64_t> shape;
  uint64_t offset = 0;        // relative to the start of the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // points into the mapped file

  uint64_t dim(size_t i) const { return i < shape.size() ? shape[i] : 1; }
  uint64_t row_length() const { return dim(0); }
  uint64_t n_rows() const { return n_elements / (shape.empty() ? 1 : shape[0]); }
};

class GgufFile {
 public:
  // Maps and parses a file. Errors: kNotFound / kIo for the file itself,
  // kInvalidArgument for malformed content, kUnimplemented for an unknown
  // version or tensor type.
  static Result<GgufFile> open(const std::string& path);
  // Parses a buffer the caller keeps alive (fuzzing, tests).
  static Result<GgufFile> parse(std::span<const uint8_t> bytes);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t file_size() const { return bytes_.size(); }
  uint64_t data_offset() const { return data_offset_; }  // absolute offset of the data section
  const std::string& path() const { return path_; }

  // Metadata in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;

  // Typed look-ups. A missing key or a wrong type is kInvalidArgument naming
  // the key (missing: kNotFound).
  Result<std::string> get_string(std::string_view key) const;
  Result<uint64_t> get_uint(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<float>> get_float_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;
  // Same, with a default when the key is absent (a wrong type is still an error).
  Result<uint64_t> get_uint_or(std::string_view key, uint64_t fallback) const;
  Result<double> get_float_or(std::string_view key, double fallback) const;
  Result<bool> get_bool_or(std::string_view key, bool fallback) const;
  Result<std::string> get_string_or(std::string_view key, std::string fallback) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

  // sha256 of the file's bytes as lowercase hex, computed on first call
  // (thread-safe).
  const std::string& digest() const;

 private:
  GgufFile() = default;
  struct Mapping;

  std::unique_ptr<Mapping> mapping_;  // null for parse()
  std::span<const uint8_t> bytes_;
  std::string path_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::unordered_map<std::string, size_t> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
  mutable std::string digest_;
  // Heap-held so GgufFile stays movable; guards the lazy digest_.
  std::unique_ptr<std::once_flag> digest_once_ = std::make_unique<std::once_flag>();

  friend class Parser;
};

}  // namespace ladder::gguf
