#include "gguf/gguf_writer.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "gguf/gguf_file.h"

namespace ladder::gguf {
namespace {

constexpr uint32_t kWriteVersion = 3;
constexpr std::string_view kAlignmentKey = "general.alignment";

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));  // little-endian host
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

void put_value(std::vector<uint8_t>& out, const Value& v) {
  switch (v.type()) {
    case ValueType::kUint8: put<uint8_t>(out, static_cast<uint8_t>(*v.as_uint())); return;
    case ValueType::kUint16: put<uint16_t>(out, static_cast<uint16_t>(*v.as_uint())); return;
    case ValueType::kUint32: put<uint32_t>(out, static_cast<uint32_t>(*v.as_uint())); return;
    case ValueType::kUint64: put<uint64_t>(out, *v.as_uint()); return;
    case ValueType::kInt8: put<int8_t>(out, static_cast<int8_t>(*v.as_int())); return;
    case ValueType::kInt16: put<int16_t>(out, static_cast<int16_t>(*v.as_int())); return;
    case ValueType::kInt32: put<int32_t>(out, static_cast<int32_t>(*v.as_int())); return;
    case ValueType::kInt64: put<int64_t>(out, *v.as_int()); return;
    case ValueType::kFloat32: put<float>(out, static_cast<float>(*v.as_float())); return;
    case ValueType::kFloat64: put<double>(out, *v.as_float()); return;
    case ValueType::kBool: put<uint8_t>(out, *v.as_bool() ? 1 : 0); return;
    case ValueType::kString: put_string(out, *v.as_string()); return;
    case ValueType::kArray: {
      const Array* a = v.as_array();
      put<uint32_t>(out, static_cast<uint32_t>(a->elem_type));
      put<uint64_t>(out, a->items.size());
      for (const Value& item : a->items) put_value(out, item);
      return;
    }
  }
  LADDER_CHECK(false, "unknown value type");
}

uint64_t align_up(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}

}  // namespace

void GgufWriter::set(std::string key, Value value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

Status GgufWriter::add_tensor(std::string name, TensorType type, std::vector<uint64_t> shape,
                              std::vector<uint8_t> data) {
  if (name.empty()) return invalid_argument("gguf writer: empty tensor name");
  for (const auto& t : tensors_) {
    if (t.name == name) return invalid_argument(fmt::format("gguf writer: duplicate tensor \"{}\"", name));
  }
  if (shape.empty() || shape.size() > static_cast<size_t>(kMaxDims)) {
    return invalid_argument(fmt::format("gguf writer: tensor \"{}\" has {} dimensions, expected 1..{}", name,
                                        shape.size(), kMaxDims));
  }
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (d == 0) return invalid_argument(fmt::format("gguf writer: tensor \"{}\" has a zero dimension", name));
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / n) {
      return invalid_argument(fmt::format("gguf writer: tensor \"{}\" element count overflows", name));
    }
    n *= d;
  }
  const TensorTypeTraits& traits = traits_of(type);
  if (shape[0] % traits.block_elems != 0) {
    return invalid_argument(
        fmt::format("gguf writer: tensor \"{}\" row length {} is not a multiple of the {} block size {}",
                    name, shape[0], traits.name, traits.block_elems));
  }
  const uint64_t expected = n / traits.block_elems * traits.block_bytes;
  if (data.size() != expected) {
    return invalid_argument(
        fmt::format("gguf writer: tensor \"{}\" has {} bytes of data, its {} shape needs {}", name,
                    data.size(), traits.name, expected));
  }
  tensors_.push_back({std::move(name), type, std::move(shape), std::move(data)});
  return Status::ok();
}

// Everything before the data section: header, metadata, tensor infos, padding.
// `data_bytes` receives the data section's size (tensors, each padded).
static std::vector<uint8_t> build_preamble(uint32_t alignment,
                                           const std::vector<std::pair<std::string, Value>>& metadata,
                                           const auto& tensors, uint64_t& data_bytes) {
  LADDER_CHECK(alignment != 0 && (alignment & (alignment - 1)) == 0,
               "GgufWriter alignment must be a power of two");
  bool has_alignment_key = false;
  for (const auto& [k, v] : metadata) {
    if (k == kAlignmentKey) {
      has_alignment_key = true;
      LADDER_CHECK(v.as_uint() == std::optional<uint64_t>(alignment),
                   "general.alignment metadata differs from the writer's alignment");
    }
  }
  // A non-default alignment must be recorded, or readers would assume 32.
  const bool add_alignment_key = !has_alignment_key && alignment != kDefaultAlignment;

  std::vector<uint8_t> out;
  put<uint32_t>(out, kGgufMagic);
  put<uint32_t>(out, kWriteVersion);
  put<uint64_t>(out, tensors.size());
  put<uint64_t>(out, metadata.size() + (add_alignment_key ? 1 : 0));
  for (const auto& [k, v] : metadata) {
    put_string(out, k);
    put<uint32_t>(out, static_cast<uint32_t>(v.type()));
    put_value(out, v);
  }
  if (add_alignment_key) {
    put_string(out, kAlignmentKey);
    put<uint32_t>(out, static_cast<uint32_t>(ValueType::kUint32));
    put<uint32_t>(out, alignment);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
    for (uint64_t d : t.shape) put<uint64_t>(out, d);
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offset);
    offset = align_up(offset + t.data.size(), alignment);
  }
  out.resize(align_up(out.size(), alignment), 0);
  data_bytes = offset;
  return out;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  uint64_t data_bytes = 0;
  std::vector<uint8_t> out = build_preamble(alignment_, metadata_, tensors_, data_bytes);
  out.reserve(out.size() + data_bytes);
  for (const auto& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    out.resize(align_up(out.size(), alignment_), 0);
  }
  return out;
}

Status GgufWriter::write(const std::string& path) const {
  uint64_t data_bytes = 0;
  const std::vector<uint8_t> preamble = build_preamble(alignment_, metadata_, tensors_, data_bytes);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return io_error(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  // Tensors stream straight from their buffers: a large synthetic model is
  // never held twice in memory.
  bool ok = std::fwrite(preamble.data(), 1, preamble.size(), f) == preamble.size();
  const std::vector<uint8_t> zeros(alignment_, 0);
  for (const auto& t : tensors_) {
    if (!ok) break;
    ok = std::fwrite(t.data.data(), 1, t.data.size(), f) == t.data.size();
    const size_t pad = align_up(t.data.size(), alignment_) - t.data.size();
    if (ok && pad > 0) ok = std::fwrite(zeros.data(), 1, pad, f) == pad;
  }
  const int write_errno = errno;
  if (std::fclose(f) != 0) ok = false;
  if (!ok) return io_error(fmt::format("{}: write failed: {}", path, std::strerror(write_errno)));
  return Status::ok();
}

}  // namespace ladder::gguf
