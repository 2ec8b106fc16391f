#include "gguf/gguf_parser.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ladder::gguf {
namespace {

// Layout of a GGUF v2/v3 file (all little-endian):
//   u32 magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv x { string key | u32 value_type | value }
//   n_tensors x { string name | u32 n_dims | u64 dims[n_dims] | u32 type | u64 offset }
//   padding to general.alignment | data section (tensor offsets are relative to it)
// A string is u64 length + bytes; an array is u32 elem_type + u64 count + items.
constexpr uint64_t kHeaderBytes = 24;
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // empty key, type, one-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims, type, offset

// Printable, bounded rendering of a name taken from the file, for messages.
std::string printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 64; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (s.size() > 64) out += "...";
  return out;
}

// Bytes a single item of `t` takes at least; arrays and strings at least
// their headers. Bounds "count items fit in the bytes left" before reserving.
uint64_t min_value_bytes(ValueType t) {
  switch (t) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool: return 1;
    case ValueType::kUint16:
    case ValueType::kInt16: return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32: return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
    case ValueType::kString: return 8;
    case ValueType::kArray: return 12;
  }
  return 1;
}

}  // namespace

Status Parser::read_string(std::string& out, std::string_view field, uint64_t max_len) {
  const uint64_t at = pos_;
  uint64_t len = 0;
  LADDER_RETURN_IF_ERROR(read_le(len, field));
  if (len > max_len) {
    return fail(field, at, fmt::format("string length {} exceeds the limit of {} bytes", len, max_len));
  }
  if (len > remaining()) {
    return fail(field, at,
                fmt::format("string length {} exceeds the {} bytes left in the file", len, remaining()));
  }
  out.assign(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
  pos_ += len;
  return Status::ok();
}

Status Parser::read_value_type(ValueType& out, std::string_view field) {
  const uint64_t at = pos_;
  uint32_t raw = 0;
  LADDER_RETURN_IF_ERROR(read_le(raw, field));
  if (raw > static_cast<uint32_t>(ValueType::kFloat64)) {
    return fail(field, at, fmt::format("unknown value type {}", raw));
  }
  out = static_cast<ValueType>(raw);
  return Status::ok();
}

Status Parser::read_value(ValueType t, Value& out, int depth) {
  const uint64_t at = pos_;
  switch (t) {
    case ValueType::kUint8: {
      uint8_t v = 0;
      LADDER_RETURN_IF_ERROR(read_le(v, "value"));
      out = Value::make_uint(t, v);
      return Status::ok();
    }
    case ValueType::kUint16: {
      uint16_t v = 0;
      LADDER_RETURN_IF_ERROR(read_le(v, "value"));
      out = Value::make_uint(t, v);
      return Status::ok();
    }
    case ValueType::kUint32: {
      uint32_t v = 0;
      LADDER_RETURN_IF_ERROR(read_le(v, "value"));
      out = Value::make_uint(t, v);
      return Status::ok();
    }
    case ValueType::kUint64: {
      uint64_t v = 0;
      LADDER_RETURN_IF_ERROR(read_le(v, "value"));
      out = Value::make_uint(t, v);
      return Status::ok();
    }
    case ValueType::kInt8: {
      int8_t v = 0;
      LADDER_RETURN_IF_ERROR(read_le(v, "value"));
      out = Value::make_int(t, v);
      return Status::ok();
    }
    case ValueType::kInt16: {
      int16_t v = 0;
      LADDER_RETURN_IF_ERROR(read_le(v, "value"));
      out = Value::make_int(t, v);
      return Status::ok();
    }
    case ValueType::kInt32: {
      int32_t v = 0;
      LADDER_RETURN_IF_ERROR(read_le(v, "value"));
      out = Value::make_int(t, v);
      return Status::ok();
    }
    case ValueType::kInt64: {
      int64_t v = 0;
      LADDER_RETURN_IF_ERROR(read_le(v, "value"));
      out = Value::make_int(t, v);
      return Status::ok();
    }
    case ValueType::kFloat32: {
      float v = 0;
      LADDER_RETURN_IF_ERROR(read_le(v, "value"));
      out = Value::make_float(t, v);
      return Status::ok();
    }
    case ValueType::kFloat64: {
      double v = 0;
      LADDER_RETURN_IF_ERROR(read_le(v, "value"));
      out = Value::make_float(t, v);
      return Status::ok();
    }
    case ValueType::kBool: {
      uint8_t v = 0;
      LADDER_RETURN_IF_ERROR(read_le(v, "value"));
      if (v > 1) return fail("value", at, fmt::format("bool byte is {}, expected 0 or 1", v));
      out = Value::make_bool(v == 1);
      return Status::ok();
    }
    case ValueType::kString: {
      std::string s;
      LADDER_RETURN_IF_ERROR(read_string(s, "string length", kMaxStringBytes));
      out = Value::make_string(std::move(s));
      return Status::ok();
    }
    case ValueType::kArray: {
      if (depth >= kMaxArrayDepth) {
        return fail("array", at, fmt::format("arrays nest deeper than {} levels", kMaxArrayDepth));
      }
      ValueType elem = ValueType::kUint8;
      LADDER_RETURN_IF_ERROR(read_value_type(elem, "array element type"));
      const uint64_t count_at = pos_;
      uint64_t count = 0;
      LADDER_RETURN_IF_ERROR(read_le(count, "array count"));
      if (count > kMaxArrayElements) {
        return fail("array count", count_at,
                    fmt::format("{} elements exceeds the limit of {}", count, kMaxArrayElements));
      }
      if (count > remaining() / min_value_bytes(elem)) {
        return fail("array count", count_at,
                    fmt::format("{} elements of type {} cannot fit in the {} bytes left in the file", count,
                                value_type_name(elem), remaining()));
      }
      metadata_items_ += count;  // count <= 2^24 here, so no overflow
      if (metadata_items_ > kMaxMetadataItems) {
        return fail("array count", count_at,
                    fmt::format("arrays hold more than {} items in total", kMaxMetadataItems));
      }
      std::vector<Value> items(count);
      item_path_.push_back(0);
      for (uint64_t i = 0; i < count; ++i) {
        item_path_.back() = i;
        LADDER_RETURN_IF_ERROR(read_value(elem, items[i], depth + 1));
      }
      item_path_.pop_back();
      out = Value::make_array(elem, std::move(items));
      return Status::ok();
    }
  }
  return fail("value type", at, "unreachable value type");
}

Status Parser::read_header(uint64_t& n_tensors, uint64_t& n_kv) {
  if (bytes_.size() < 8) {
    return fail("magic", 0, fmt::format("the file is {} bytes, too small for a GGUF header", bytes_.size()));
  }
  uint32_t magic = 0;
  LADDER_RETURN_IF_ERROR(read_le(magic, "magic"));
  if (magic != kGgufMagic) {
    return fail(
        "magic", 0,
        fmt::format("not a GGUF file (magic 0x{:08x}, expected 0x{:08x} \"GGUF\")", magic, kGgufMagic));
  }
  uint32_t version = 0;
  LADDER_RETURN_IF_ERROR(read_le(version, "version"));
  const uint32_t swapped = __builtin_bswap32(version);
  if (version > 0xffff && swapped >= 1 && swapped <= 3) {
    return fail(
        "version", 4,
        fmt::format("byte-swapped version {} ({:#010x}): a big-endian GGUF file, which Ladder does not read; "
                    "convert it to little-endian",
                    swapped, version),
        StatusCode::kUnimplemented);
  }
  if (version == 1) {
    return fail("version", 4, "GGUF v1 (32-bit counts) is not supported; re-convert the model to GGUF v3",
                StatusCode::kUnimplemented);
  }
  if (version != 2 && version != 3) {
    return fail("version", 4, fmt::format("unknown GGUF version {} (Ladder reads v2 and v3)", version),
                StatusCode::kUnimplemented);
  }
  file_.version_ = version;
  LADDER_RETURN_IF_ERROR(read_le(n_tensors, "n_tensors"));
  LADDER_RETURN_IF_ERROR(read_le(n_kv, "n_kv"));
  if (n_tensors > kMaxTensors || n_tensors > remaining() / kMinTensorInfoBytes) {
    return fail("n_tensors", 8,
                fmt::format("{} tensors cannot be described in the {} bytes left (limit {})", n_tensors,
                            remaining(), kMaxTensors));
  }
  if (n_kv > kMaxMetadataEntries || n_kv > remaining() / kMinKvBytes) {
    return fail("n_kv", 16,
                fmt::format("{} metadata entries cannot fit in the {} bytes left (limit {})", n_kv,
                            remaining(), kMaxMetadataEntries));
  }
  if (n_tensors * kMinTensorInfoBytes + n_kv * kMinKvBytes > remaining()) {
    return fail("n_tensors", 8,
                fmt::format("{} tensors and {} metadata entries cannot fit in the {} bytes left", n_tensors,
                            n_kv, remaining()));
  }
  return Status::ok();
}

Status Parser::read_metadata(uint64_t n_kv) {
  file_.metadata_.reserve(n_kv);
  value_positions_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    ctx_ = fmt::format("metadata {}", i);
    const uint64_t key_at = pos_;
    std::string key;
    LADDER_RETURN_IF_ERROR(read_string(key, "key", kMaxKeyBytes));
    if (key.empty()) return fail("key", key_at, "empty key");
    ctx_ = fmt::format("metadata {} (\"{}\")", i, printable(key));
    if (auto it = file_.metadata_index_.find(key); it != file_.metadata_index_.end()) {
      return fail("key", key_at, fmt::format("duplicate key (first defined by metadata {})", it->second));
    }
    ValueType type = ValueType::kUint8;
    LADDER_RETURN_IF_ERROR(read_value_type(type, "value type"));
    value_positions_.push_back(pos_);
    Value value;
    LADDER_RETURN_IF_ERROR(read_value(type, value, 0));
    file_.metadata_index_.emplace(key, file_.metadata_.size());
    file_.metadata_.emplace_back(std::move(key), std::move(value));
  }
  return Status::ok();
}

Status Parser::read_tensor_infos(uint64_t n_tensors, std::vector<uint64_t>& offset_positions) {
  file_.tensors_.reserve(n_tensors);
  offset_positions.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    ctx_ = fmt::format("tensor {}", i);
    TensorInfo info;
    const uint64_t name_at = pos_;
    LADDER_RETURN_IF_ERROR(read_string(info.name, "name", kMaxTensorNameBytes));
    if (info.name.empty()) return fail("name", name_at, "empty tensor name");
    ctx_ = fmt::format("tensor {} (\"{}\")", i, printable(info.name));
    if (auto it = file_.tensor_index_.find(info.name); it != file_.tensor_index_.end()) {
      return fail("name", name_at,
                  fmt::format("duplicate tensor name (first defined by tensor {})", it->second));
    }

    const uint64_t n_dims_at = pos_;
    uint32_t n_dims = 0;
    LADDER_RETURN_IF_ERROR(read_le(n_dims, "n_dims"));
    if (n_dims > static_cast<uint32_t>(kMaxDims)) {
      return fail("n_dims", n_dims_at,
                  fmt::format("{} dimensions, at most {} are allowed", n_dims, kMaxDims));
    }
    const uint64_t dims_at = pos_;
    LADDER_RETURN_IF_ERROR(need(8ull * n_dims, "dims"));
    uint64_t n_elements = 1;
    info.shape.resize(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
      LADDER_RETURN_IF_ERROR(read_le(info.shape[d], "dims"));
      if (info.shape[d] == 0) return fail("dims", dims_at, fmt::format("dimension {} is 0", d));
      if (info.shape[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / n_elements) {
        return fail("dims", dims_at, "the element count overflows 63 bits");
      }
      n_elements *= info.shape[d];
    }
    info.n_elements = n_elements;

    const uint64_t type_at = pos_;
    uint32_t raw_type = 0;
    LADDER_RETURN_IF_ERROR(read_le(raw_type, "type"));
    const auto traits = tensor_type_traits(raw_type);
    if (!traits) {
      return fail("type", type_at, fmt::format("unknown tensor type id {}", raw_type),
                  StatusCode::kUnimplemented);
    }
    info.type = traits->type;
    if (info.row_length() % traits->block_elems != 0) {
      return fail("dims", dims_at,
                  fmt::format("row length {} is not a multiple of the {} block size {}", info.row_length(),
                              traits->name, traits->block_elems));
    }
    const uint64_t n_blocks = n_elements / traits->block_elems;
    if (n_blocks > std::numeric_limits<uint64_t>::max() / traits->block_bytes) {
      return fail("dims", dims_at, "the byte size overflows 64 bits");
    }
    info.n_bytes = n_blocks * traits->block_bytes;
    if (info.n_bytes > bytes_.size()) {
      return fail("dims", dims_at,
                  fmt::format("{} bytes of {} data exceed the file size {}", info.n_bytes, traits->name,
                              bytes_.size()));
    }

    offset_positions.push_back(pos_);
    LADDER_RETURN_IF_ERROR(read_le(info.offset, "offset"));
    file_.tensor_index_.emplace(info.name, file_.tensors_.size());
    file_.tensors_.push_back(std::move(info));
  }
  return Status::ok();
}

Status Parser::resolve_alignment() {
  auto it = file_.metadata_index_.find("general.alignment");
  if (it == file_.metadata_index_.end()) {
    file_.alignment_ = kDefaultAlignment;
    return Status::ok();
  }
  ctx_ = fmt::format("metadata {} (\"general.alignment\")", it->second);
  const uint64_t at = value_positions_[it->second];
  const Value& v = file_.metadata_[it->second].second;
  const bool is_unsigned = v.type() == ValueType::kUint8 || v.type() == ValueType::kUint16 ||
                           v.type() == ValueType::kUint32 || v.type() == ValueType::kUint64;
  if (!is_unsigned) {
    return fail(
        "value", at,
        fmt::format("alignment has type {}, expected an unsigned integer", value_type_name(v.type())));
  }
  const uint64_t a = *v.as_uint();
  if (a == 0 || (a & (a - 1)) != 0 || a > (1ull << 30)) {
    return fail("value", at, fmt::format("alignment {} is not a power of two in [1, 2^30]", a));
  }
  file_.alignment_ = static_cast<uint32_t>(a);
  return Status::ok();
}

Status Parser::place_tensors(const std::vector<uint64_t>& offset_positions) {
  const uint64_t size = bytes_.size();
  const uint64_t align = file_.alignment_;
  // pos_ <= size and align <= 2^30, so this cannot overflow.
  uint64_t data_offset = (pos_ + align - 1) / align * align;
  if (data_offset > size) {
    if (!file_.tensors_.empty()) {
      ctx_ = "header";
      return fail("data section", pos_,
                  fmt::format("padding to alignment {} ends at byte {}, past the end of the file ({} bytes)",
                              align, data_offset, size));
    }
    data_offset = size;  // a metadata-only file (a vocabulary) may end unpadded
  }
  file_.data_offset_ = data_offset;
  const uint64_t data_size = size - data_offset;
  uint64_t total = 0;
  for (size_t i = 0; i < file_.tensors_.size(); ++i) {
    TensorInfo& t = file_.tensors_[i];
    ctx_ = fmt::format("tensor {} (\"{}\")", i, printable(t.name));
    const uint64_t at = offset_positions[i];
    if (t.offset % align != 0) {
      return fail("offset", at,
                  fmt::format("offset {} is not a multiple of the alignment {}", t.offset, align));
    }
    if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
      return fail(
          "offset", at,
          fmt::format("data [{}, +{}) lies outside the file's {}-byte data section (starting at byte {})",
                      t.offset, t.n_bytes, data_size, data_offset));
    }
    total += t.n_bytes;  // each n_bytes <= data_size, so no overflow before the check below trips
    if (total > data_size) {
      return fail(
          "offset", at,
          fmt::format("tensors so far need {} bytes, more than the {}-byte data section", total, data_size));
    }
    t.data = bytes_.data() + data_offset + t.offset;
  }
  return Status::ok();
}

Status Parser::run() {
  file_.bytes_ = bytes_;
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  LADDER_RETURN_IF_ERROR(read_header(n_tensors, n_kv));
  LADDER_RETURN_IF_ERROR(read_metadata(n_kv));
  std::vector<uint64_t> offset_positions;
  LADDER_RETURN_IF_ERROR(read_tensor_infos(n_tensors, offset_positions));
  LADDER_RETURN_IF_ERROR(resolve_alignment());
  return place_tensors(offset_positions);
}

static_assert(kHeaderBytes == 24);

Status Parser::parse_into(std::span<const uint8_t> bytes, GgufFile& file) {
  Parser parser(bytes, file);
  return parser.run();
}

}  // namespace ladder::gguf
