// Helpers for the gguf tests: a byte-level GGUF builder that is independent
// of GgufWriter (so malformed files can be crafted field by field), and a
// walk that touches every value and tensor of a parsed file.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/quant.h"

namespace ladder::gguf::test {

// Appends little-endian fields; the caller lays out the file by hand.
struct RawGguf {
  std::vector<uint8_t> bytes;

  RawGguf& u8(uint8_t v) { return put(v); }
  RawGguf& u32(uint32_t v) { return put(v); }
  RawGguf& u64(uint64_t v) { return put(v); }
  RawGguf& i32(int32_t v) { return put(v); }
  RawGguf& f32(float v) { return put(v); }
  RawGguf& str(std::string_view s) {
    u64(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  RawGguf& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return u32(kGgufMagic).u32(version).u64(n_tensors).u64(n_kv);
  }
  // key + value type + u32 value
  RawGguf& kv_u32(std::string_view key, uint32_t v) { return str(key).u32(4).u32(v); }
  RawGguf& kv_str(std::string_view key, std::string_view v) { return str(key).u32(8).str(v); }
  RawGguf& tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  RawGguf& pad_to(size_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back(0);
    return *this;
  }
  RawGguf& zeros(size_t n) {
    bytes.insert(bytes.end(), n, 0);
    return *this;
  }

 private:
  template <typename T>
  RawGguf& put(T v) {
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
    return *this;
  }
};

// Reads everything a consumer could: every getter on every key, every array
// item, and the first block of each dequantizable tensor. Returns a checksum
// so the work cannot be optimised away.
inline double touch_everything(const GgufFile& f) {
  double acc = f.version() + f.alignment() + static_cast<double>(f.data_offset());
  for (const auto& [key, value] : f.metadata()) {
    acc += f.get_uint(key).is_ok() + f.get_int(key).is_ok() + f.get_float(key).is_ok();
    acc += f.get_bool(key).is_ok() + f.get_string(key).is_ok();
    acc += f.get_string_array(key).is_ok() + f.get_float_array(key).is_ok() + f.get_int_array(key).is_ok();
    if (const Array* a = value.as_array()) acc += static_cast<double>(a->items.size());
  }
  for (const TensorInfo& t : f.tensors()) {
    const TensorTypeTraits& traits = traits_of(t.type);
    acc += static_cast<double>(t.n_bytes);
    if (!traits.dequantizable || t.n_bytes < traits.block_bytes) continue;
    std::vector<float> y(traits.block_elems);
    if (dequantize_row(t.type, t.data, y.data(), y.size()).is_ok()) acc += y[0] == y[0] ? 1 : 0;
  }
  return acc;
}

}  // namespace ladder::gguf::test
